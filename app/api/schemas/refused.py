"""Fields an OpenAI-shaped body may not carry, top-level or inside its messages: they
would name an identity or an upstream. Other unknown OpenAI parameters are accepted and
ignored, as compatible servers do."""

from __future__ import annotations

from typing import Any

REFUSED_FIELDS = frozenset(
    {"api_key", "api_base", "base_url", "owner_id", "user_id", "organization", "headers"}
)


def refuse_smuggled(extra: dict[str, Any] | None) -> None:
    """Raise ValueError (a validation error) when `extra` holds a refused field."""
    found = sorted(set(extra or {}) & REFUSED_FIELDS)
    if found:
        raise ValueError(f"unsupported field: {found[0]}")
