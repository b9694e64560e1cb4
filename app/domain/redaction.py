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
from urllib.parse import unquote_plus, urlsplit

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
    # Query parameters that carry a credential though their name does not say so
    # (Google-style `?key=`, signed URLs' `sig=` / `signature=`).
    re.compile(r"(?i)[?&](?:key|sig|signature)=(?P<secret>[^\s\"'&#]{4,})"),
)

# A configured URL's path segment or query value with a run of letters and digits this
# long, mixing both, is taken for a key; query values under these names are keys whatever
# their length.
_ALNUM_RUN = re.compile(r"[A-Za-z0-9]{12,}")
_QUERY_NAMES = frozenset({"key", "sig", "signature"})

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


def _key_shaped(text: str) -> bool:
    """A run of letters and digits long enough to be a key: `v1`, `deployments`,
    `gpt-4o-mini-2024-07-18` are not, `k7f3a09c1d2e4b5a6` (a gateway's key in the path) or
    a UUID is."""
    return any(
        any(c.isdigit() for c in run) and any(c.isalpha() for c in run)
        for run in _ALNUM_RUN.findall(text)
    )


def url_secrets(url: str) -> list[str]:
    """The parts of a configured URL that may be a credential, to scrub verbatim.

    Hosted MCP servers and provider gateways often take their key in the URL's path or
    query, where it has no secret shape; the HTTP clients and SDKs write the URL of every
    request to their loggers (the Anthropic SDK at DEBUG). So the log filter is given the
    userinfo, every key-shaped path segment, and every query value that is key-shaped or
    named like a credential, in their raw and decoded spelling."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return []
    found = [parts.password] if parts.password else []
    found += [s for s in parts.path.split("/") if _key_shaped(unquote_plus(s))]
    for pair in parts.query.split("&"):
        name, _, value = pair.partition("=")
        name = unquote_plus(name)
        if is_secret_name(name) or name.lower() in _QUERY_NAMES or _key_shaped(value):
            found.append(value)
    spelled = {spelling for value in found for spelling in (value, unquote_plus(value))}
    return sorted(v for v in spelled if len(v) >= MIN_SECRET_LENGTH)


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
