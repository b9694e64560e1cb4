"""Short-lived signed tokens for EventSource, which cannot send an Authorization header.

A stream token is a compact HS256 JWT signed with a key of its own (derived from
`JWT_SECRET` or set as `STREAM_TOKEN_SECRET`), so it can never pass as a bearer token and
a bearer token can never pass as a stream token. It names its user and roles, expires
after `stream_token_ttl_seconds`, is good only for GET, and only for its scope: a path
prefix (segment-wise) or a run id (any path with the segments `runs/<run_id>`).
It travels as `?token=`; the access log never prints query strings.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from dataclasses import dataclass
from typing import Any

from app.auth.errors import Unauthorized
from app.domain.errors import InvalidRequest
from app.domain.identity import Caller

_AUDIENCE = "chat-bff:stream"
_TYPE = "stream"


@dataclass(frozen=True)
class StreamToken:
    token: str
    expires_at: int


def derive_stream_key(jwt_secret: str | None, explicit: str | None) -> tuple[bytes, bool]:
    """The signing key and whether it is stable across processes."""
    if explicit:
        return explicit.encode(), True
    if jwt_secret:
        # A separate key, so the two token kinds can never verify as one another.
        return hmac.new(
            jwt_secret.encode(), b"chat-bff stream tokens v1", hashlib.sha256
        ).digest(), True
    return secrets.token_bytes(32), False


def _normalise_path(path: str) -> str:
    if not path.startswith("/") or "//" in path or "?" in path or "#" in path:
        raise InvalidRequest("`path` must be an absolute path without query.", param="path")
    path = path.rstrip("/")
    segments = path.split("/")
    if any(s in {".", ".."} for s in segments):
        raise InvalidRequest("`path` must not contain dot segments.", param="path")
    if segments[:2] != ["", "api"] or len(segments) < 4:
        # A token for "/" or "/api" would be a general GET credential sitting in a URL.
        raise InvalidRequest("`path` must name a resource under /api/.", param="path")
    return path


class StreamTokens:
    def __init__(self, key: bytes, *, ttl_seconds: int) -> None:
        self._key = key
        self._ttl = ttl_seconds

    def mint(
        self, caller: Caller, *, path: str | None = None, run_id: str | None = None
    ) -> StreamToken:
        if (path is None) == (run_id is None):
            raise InvalidRequest("Give exactly one of `path` or `run_id`.")
        now = int(time.time())
        claims: dict[str, Any] = {
            "typ": _TYPE,
            "aud": _AUDIENCE,
            "sub": caller.user_id,
            "roles": sorted(caller.roles),
            "iat": now,
            "exp": now + self._ttl,
        }
        if path is not None:
            claims["pfx"] = _normalise_path(path)
        else:
            claims["run"] = run_id
        import jwt  # on the first stream token: PyJWT brings cryptography, 9 MB of a worker

        return StreamToken(jwt.encode(claims, self._key, algorithm="HS256"), now + self._ttl)

    def verify(self, token: str, *, method: str, path: str) -> Caller:
        import jwt

        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                self._key,
                algorithms=["HS256"],
                audience=_AUDIENCE,
                options={"require": ["exp", "sub", "typ"]},
            )
        except jwt.PyJWTError as exc:
            raise Unauthorized(f"stream token: {type(exc).__name__}") from None
        if claims.get("typ") != _TYPE:
            raise Unauthorized("stream token: wrong type")
        if method not in {"GET", "HEAD"}:
            raise Unauthorized("stream token: only GET")
        if not _in_scope(claims, path):
            raise Unauthorized("stream token: path out of scope")
        roles = claims.get("roles", [])
        return Caller(
            user_id=str(claims["sub"]),
            roles=frozenset(str(r) for r in roles) if isinstance(roles, list) else frozenset(),
            method="stream_token",
        )


def _in_scope(claims: dict[str, Any], path: str) -> bool:
    prefix = claims.get("pfx")
    if isinstance(prefix, str):
        return path == prefix or path.startswith(prefix + "/")
    run_id = claims.get("run")
    if isinstance(run_id, str) and run_id:
        segments = path.split("/")
        return any(
            segments[i] == "runs" and segments[i + 1] == run_id for i in range(len(segments) - 1)
        )
    return False
