"""The user's identity for downstream APIs (tools with `forward_identity`).

    bearer  the caller's own JWT, passed on as it came (only when FORWARD_BEARER_TOKENS is
            on: the downstream must trust the same issuer, and the token's audience is ours)
    minted  a short-lived HS256 token the service signs with FORWARD_TOKEN_SECRET for the
            tool's `audience`: `sub` and `roles` are the user's, `act.sub` is the service
            (RFC 8693's actor claim: the service acting for the user), `exp` is
            FORWARD_TOKEN_TTL_SECONDS away

With a minting key, every forwarded identity also carries the service's own token (`sub`
is the service, same audience), so a downstream can check both who the user is and who
relays the call. Tokens live in memory for the call only: not in logs, events, the
database or anything the model sees.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

from pydantic import SecretStr

from app.domain.identity import Caller, ForwardedIdentity, ForwardMode


class Forwarder:
    def __init__(
        self,
        *,
        secret: SecretStr | None,
        issuer: str = "chat-bff",
        ttl_seconds: int = 60,
        allow_bearer: bool = False,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._secret = secret
        self._issuer = issuer
        self._ttl = ttl_seconds
        self._allow_bearer = allow_bearer
        self._clock = clock

    def forward(
        self, caller: Caller, mode: ForwardMode, audience: str | None
    ) -> ForwardedIdentity | None:
        service = self._mint(self._issuer, audience) if self._secret is not None else None
        if mode == "bearer":
            if not self._allow_bearer or caller.bearer is None:
                return None
            return ForwardedIdentity(caller.bearer, service, audience)
        if mode == "minted" and self._secret is not None:
            user = self._mint(
                caller.user_id, audience, roles=sorted(caller.roles), act={"sub": self._issuer}
            )
            return ForwardedIdentity(user, service, audience)
        return None

    def _mint(self, subject: str, audience: str | None, **claims: Any) -> SecretStr:
        assert self._secret is not None
        now = int(self._clock())
        payload: dict[str, Any] = {
            "iss": self._issuer,
            "sub": subject,
            "iat": now,
            "exp": now + self._ttl,
            "jti": uuid.uuid4().hex,
            **claims,
        }
        if audience is not None:
            payload["aud"] = audience
        import jwt  # on the first minted token, not at start-up (it brings cryptography)

        return SecretStr(jwt.encode(payload, self._secret.get_secret_value(), algorithm="HS256"))
