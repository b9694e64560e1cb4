"""The one check every request goes through, whatever credential it carries.

Credentials, first present wins:
1. `Authorization: Bearer <jwt>` (or `Bearer cbff_...`: an API key, so the official OpenAI
   SDK pointed at us can authenticate with `api_key=` as it always does);
2. `X-API-Key: cbff_...`;
3. `?token=<stream token>` (EventSource cannot send headers; GET only, scoped to a path).

Development mode (no JWT key configured, never in production) makes every request without
a verifiable credential the configured local user with roles `user` and `admin`, and says
so loudly at start-up. API keys and stream tokens are still verified when presented: a
bad one is a 401 in every mode. Every failure is the same `Unauthorized`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from pydantic import SecretStr

from app.auth.api_keys import hash_api_key, looks_like_api_key
from app.auth.errors import Unauthorized
from app.auth.stream_tokens import StreamTokens
from app.domain.identity import Caller
from app.store.database import Database

if TYPE_CHECKING:
    from app.auth.jwt import JwtVerifier

log = logging.getLogger("chat_bff.auth")

LOCAL_ROLES = frozenset({"user", "admin"})
_TOUCH_EVERY = timedelta(minutes=1)


@dataclass(frozen=True)
class Credentials:
    """What a request presents, read off it by the API layer (this module knows no HTTP)."""

    authorization: str | None = None  # the Authorization header
    api_key: str | None = None  # X-API-Key
    stream_token: str | None = None  # ?token=
    method: str = "GET"
    path: str = "/"


@dataclass(frozen=True)
class AuthConfig:
    jwt: JwtVerifier | None
    stream_tokens: StreamTokens
    local_user_id: str
    development: bool


class Authenticator:
    def __init__(self, config: AuthConfig, db: Database) -> None:
        self._config = config
        self._db = db
        self.stream_tokens = config.stream_tokens

    @property
    def development(self) -> bool:
        return self._config.development

    def warn_if_open(self) -> None:
        if self._config.development:
            log.warning(
                "AUTHENTICATION IS OFF: no JWT key is configured, so every request without "
                "an API key acts as the local user %r with roles user+admin. Never expose "
                "this instance; set JWT_SECRET, JWT_PUBLIC_KEY or JWT_JWKS_FILE.",
                self._config.local_user_id,
            )

    async def authenticate(self, credentials: Credentials) -> Caller:
        header = credentials.authorization
        if header is not None:
            scheme, _, value = header.partition(" ")
            value = value.strip()
            if scheme.lower() == "bearer" and value:
                if looks_like_api_key(value):
                    return await self.verify_api_key(value)
                if self._config.jwt is not None:
                    return self._from_jwt(value)
            if not self._config.development:
                raise Unauthorized("unsupported authorization header")
        if credentials.api_key is not None:
            return await self.verify_api_key(credentials.api_key.strip())
        if credentials.stream_token is not None:
            return self.stream_tokens.verify(
                credentials.stream_token, method=credentials.method, path=credentials.path
            )
        if self._config.development:
            return Caller(user_id=self._config.local_user_id, roles=LOCAL_ROLES)
        raise Unauthorized("no credentials")

    def _from_jwt(self, token: str) -> Caller:
        assert self._config.jwt is not None
        claims = self._config.jwt.verify(token)
        return Caller(
            user_id=claims.subject, roles=claims.roles, method="jwt", bearer=SecretStr(token)
        )

    async def verify_api_key(self, key: str) -> Caller:
        if not looks_like_api_key(key):
            raise Unauthorized("api key: malformed")
        async with self._db.unit() as tx:
            record = await tx.api_keys.find_active(hash_api_key(key))
            if record is None:
                raise Unauthorized("api key: unknown or revoked")
            now = datetime.now(UTC)
            if record.last_used_at is None or now - record.last_used_at > _TOUCH_EVERY:
                await tx.api_keys.touch(record.id)
                await tx.commit()
        return Caller(
            user_id=record.owner_id,
            roles=frozenset(record.roles),
            method="api_key",
            api_key_id=record.id,
        )
