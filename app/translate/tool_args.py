"""Tool-call arguments as the model wrote them (JSON text) -> a JSON object, or why not.

Every reader of a model's tool call needs this, streamed (the parts builder) or replayed
in a history (the OpenAI readers); one function, so a bad call reads the same everywhere.
"""

from __future__ import annotations

import json
from typing import Any

from app.domain import jsontext


def parse_tool_args(name: str, text: str) -> tuple[dict[str, Any] | None, str | None]:
    """Arguments as a JSON object, or None and a readable reason for the tool card."""
    if not text.strip():
        return {}, None
    try:
        value = jsontext.loads_value(text)
    except json.JSONDecodeError as exc:
        # Text too deep or with too long a number fails as a whole: no position to name.
        where = f" at position {exc.pos}" if exc.pos else ""
        return None, (
            f"The model sent arguments for `{name}` that are not valid JSON "
            f"({exc.msg}{where}); the tool was not run."
        )
    if not isinstance(value, dict):
        return None, (
            f"The model sent arguments for `{name}` that are not a JSON object; "
            "the tool was not run."
        )
    return value, None
