"""Fields an OpenAI-shaped body may not carry, top-level or inside its messages: they
would name an identity or an upstream. Other unknown OpenAI parameters are accepted and
ignored, as compatible servers do."""

from __future__ import annotations

REFUSED_FIELDS = frozenset(
    {"api_key", "api_base", "base_url", "owner_id", "user_id", "organization", "headers"}
)
