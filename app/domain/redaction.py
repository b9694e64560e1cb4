"""The one list of secret shapes, for every place that must not repeat a credential.

Two layers scrub text with it: the providers, before an upstream explanation (a 4xx
message) goes into an error a client sees, and the log filter, as the last line of
defence on every record. Both import this module, so a shape added here is scrubbed
everywhere at once. It lives in the domain because it is pure and both layers may import
the domain; neither may import the other.

Each pattern names the part to hide as the group `secret`; the text around it (a
`Bearer ` scheme, an `api_key=` name, a URL's scheme and host) stays, so a reader still
sees what was removed. Configured secret values (the provider keys, the JWT secret) are
replaced verbatim first, whatever their shape.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

REDACTED = "[redacted]"

# Shorter configured values are not replaced: a 1-3 character "secret" would mangle text
# and protects nothing.
MIN_SECRET_LENGTH = 4

SECRET_PATTERNS: tuple[re.Pattern[str], ...] = (
    # Provider keys: OpenAI `sk-...` / `sk-proj-...`, Anthropic `sk-ant-...`, also the
    # masked form upstream errors quote (`sk-abc***`).
    re.compile(r"\b(?P<secret>sk-[A-Za-z0-9_\-*.]{3,}[A-Za-z0-9_\-*])"),
    # This service's own API keys.
    re.compile(r"\b(?P<secret>cbff_[A-Za-z0-9_\-]{8,})"),
    # AWS access key ids.
    re.compile(r"\b(?P<secret>(?:AKIA|ASIA)[A-Z0-9]{12,})"),
    # JWTs: base64url header, payload and signature.
    re.compile(r"\b(?P<secret>eyJ[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]*)"),
    # Authorization header values (RFC 9110 token68 credentials).
    re.compile(r"(?i)\bbearer\s+(?P<secret>[A-Za-z0-9._~+/=\-]+)"),
    re.compile(r"(?i)\bbasic\s+(?P<secret>[A-Za-z0-9+/=]{8,})"),
    # `name=value`, `name: value`, `"name": "value"` where the name says secret (also in a
    # URL's query string). A `Bearer`/`Basic` value was handled above and keeps its scheme.
    re.compile(
        r"(?i)(?:api[_-]?key|secret|password|passwd|token|authorization)[\"']?\s*[:=]\s*[\"']?"
        r"(?!(?:bearer|basic)\s)(?P<secret>[^\s\"',;&]{4,})"
    ),
    # Credentials in a URL's userinfo: scheme://user:password@host.
    re.compile(r"://(?P<secret>[^/\s@]+)@"),
)

# Field names whose value is a secret whatever it looks like (log `extra=` fields, dict keys).
_SECRET_NAME = re.compile(r"(?i)(secret|token|password|passwd|api_?key|authorization|cookie)")


def _hide(match: re.Match[str]) -> str:
    start, end = match.span("secret")
    whole, offset = match.group(0), match.start()
    return whole[: start - offset] + REDACTED + whole[end - offset :]


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """`text` with the configured `secrets` and anything secret-shaped replaced."""
    for secret in sorted(secrets, key=len, reverse=True):
        if len(secret) >= MIN_SECRET_LENGTH:
            text = text.replace(secret, REDACTED)
    for pattern in SECRET_PATTERNS:
        text = pattern.sub(_hide, text)
    return text


def is_secret_name(name: str) -> bool:
    """Whether a field called `name` holds a secret (`api_key`, `x-token`, `password`...)."""
    return _SECRET_NAME.search(name) is not None


def redact_value(value: Any, secrets: Iterable[str] = ()) -> Any:
    """A JSON-like value with strings redacted and values under secret names replaced."""
    secrets = tuple(secrets)
    if isinstance(value, str):
        return redact(value, secrets)
    if isinstance(value, dict):
        return {
            k: REDACTED if is_secret_name(str(k)) else redact_value(v, secrets)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [redact_value(v, secrets) for v in value]
    return value
