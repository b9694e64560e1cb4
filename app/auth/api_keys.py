"""API keys for service-to-service callers: made here, stored only as a SHA-256 digest.

A key is `cbff_` + 43 url-safe characters (256 random bits). That entropy is why a plain
SHA-256 is the right digest (a slow password hash buys nothing against a random key and
costs every request). The visible `cbff_` prefix lets secret scanners and our own log
redaction recognise a leaked key; the first characters after it (`display_prefix`) are
kept so an admin can tell keys apart in a list.
"""

from __future__ import annotations

import hashlib
import secrets

KEY_PREFIX = "cbff_"
_DISPLAY_CHARS = 8


def generate_api_key() -> str:
    return KEY_PREFIX + secrets.token_urlsafe(32)


def looks_like_api_key(value: str) -> bool:
    return value.startswith(KEY_PREFIX) and 20 <= len(value) <= 128


def hash_api_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def display_prefix(key: str) -> str:
    return key[: len(KEY_PREFIX) + _DISPLAY_CHARS]
