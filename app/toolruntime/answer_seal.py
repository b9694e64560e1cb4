"""What is kept of an answer to a tool's question, to know the same answer when it is sent
again: never its content, and, given a server-held key, nothing against which a reader of
the table could check a guess (a PIN, yes or no, one of a few choices).

    kept as                            made with
    `k1:` + HMAC-SHA256 (base64url)    a key derived from the stream-token key (from
                                       STREAM_TOKEN_SECRET or JWT_SECRET): stable across
                                       processes, unknown to a reader of the table
    `s1:<salt>:` + salted sha256       no stable key (a development process): a salt per
                                       row, so no table of precomputed answers fits; a
                                       single guess can still be checked
    64 hex digits                      an unsalted sha256, kept before this scheme: still
                                       compared, so an answer given before sent again still
                                       finds its run; no such row is written any more
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from typing import Any

from app.tools.pinning import args_hash, canonical_json

_CONTEXT = b"chat-bff elicitation answers v1"


def _b64(digest: bytes) -> str:
    return base64.urlsafe_b64encode(digest).decode().rstrip("=")


class AnswerSeal:
    def __init__(self, key: bytes | None = None) -> None:
        """`key`: a server-held key stable across processes (None: none is)."""
        self._key = None if key is None else hmac.digest(key, _CONTEXT, "sha256")

    def seal(self, action: str, content: dict[str, Any] | None) -> str:
        """What is kept of the answer (at most 64 characters)."""
        text = _text(action, content)
        if self._key is not None:
            return "k1:" + _b64(hmac.digest(self._key, text, "sha256"))
        salt = secrets.token_urlsafe(12)
        return f"s1:{salt}:" + _b64(hashlib.sha256(salt.encode() + text).digest())

    def matches(self, kept: str | None, action: str, content: dict[str, Any] | None) -> bool:
        """Whether `kept` was made of this answer."""
        if kept is None:
            return False
        text = _text(action, content)
        if kept.startswith("k1:"):
            if self._key is None:
                return False
            made = "k1:" + _b64(hmac.digest(self._key, text, "sha256"))
        elif kept.startswith("s1:"):
            salt = kept.split(":", 2)[1]
            made = f"s1:{salt}:" + _b64(hashlib.sha256(salt.encode() + text).digest())
        else:
            made = args_hash({"action": action, "content": content})
        return hmac.compare_digest(made, kept)


def _text(action: str, content: dict[str, Any] | None) -> bytes:
    return canonical_json({"action": action, "content": content}).encode()
