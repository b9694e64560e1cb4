"""The `Idempotency-Key` request header (Stripe's convention, the IETF httpapi draft "The
Idempotency-Key HTTP Header Field") on the routes that create things.

A client that did not get the answer to a create (a dropped connection, a 503
`database_unavailable` from a COMMIT that did land) sends the same request again with
the same key and gets the first answer, its ids included; nothing is created twice. The
key is the caller's own: another caller's same key is another key. What is kept, and
for how long, is `app.store.idempotency`'s; this module reads the header.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from app.domain.errors import InvalidRequest
from app.store.idempotency import IdempotencyKey

HEADER = "Idempotency-Key"
MAX_KEY_LENGTH = 255
# Printable ASCII (a UUID, a quoted sf-string as the draft writes it, ...), 1 to 255.
_KEY = re.compile(rf"[\x20-\x7e]{{1,{MAX_KEY_LENGTH}}}")

DESCRIPTION = (
    "Makes this create safe to retry: a repeat with the same key and the same body answers "
    "the first request's outcome again (same status, body and ids) and creates nothing. "
    "1-255 printable ASCII characters (e.g. a UUID), scoped to the caller, kept for "
    "`IDEMPOTENCY_KEY_TTL_SECONDS` (24 h by default). The same key with another request "
    "is 422 `idempotency_key_reused`."
)


def openapi(note: str = "") -> dict[str, Any]:
    """The header as an OpenAPI parameter, for the routes' `openapi_extra` (with `note`
    on what the route keeps): the dependency reads it from the request itself, so that a
    turn's route keeps the direct path (`app.api.direct_handler` takes dependencies that
    take only the request)."""
    return {
        "parameters": [
            {
                "name": HEADER,
                "in": "header",
                "required": False,
                "description": f"{DESCRIPTION} {note}".strip(),
                "schema": {"type": "string", "minLength": 1, "maxLength": MAX_KEY_LENGTH},
            }
        ]
    }


OPENAPI = openapi()


@dataclass(frozen=True, slots=True)
class RequestKey:
    """A request's `Idempotency-Key` and fingerprint, before it is bound to its caller."""

    key: str
    fingerprint: str
    ttl: timedelta

    def of(self, owner_id: str) -> IdempotencyKey:
        """The key in the caller's own namespace."""
        return IdempotencyKey(owner_id, self.key, self.fingerprint, self.ttl)


def request_key(raw: str, method: str, path: str, body: bytes, ttl: timedelta) -> RequestKey:
    """The request's key and fingerprint; a malformed key is 400."""
    if _KEY.fullmatch(raw) is None or not raw.strip():
        raise InvalidRequest(
            f"{HEADER} must be 1 to {MAX_KEY_LENGTH} printable ASCII characters.", param=HEADER
        )
    return RequestKey(key=raw, fingerprint=fingerprint(method, path, body), ttl=ttl)


def fingerprint(method: str, path: str, body: bytes) -> str:
    """A hash of what the request asks: its method, path and body (a JSON body in a
    canonical form, so key order and white space do not make another request)."""
    try:
        canonical = json.dumps(
            json.loads(body), sort_keys=True, separators=(",", ":"), ensure_ascii=False
        ).encode()
    except ValueError:
        canonical = body
    digest = hashlib.sha256(f"{method} {path}\n".encode())
    digest.update(canonical)
    return digest.hexdigest()
