"""Read the tools an OpenAI Responses client declares, and its tool choice -> ours."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from app.domain.errors import InvalidRequest
from app.domain.stream import TOOL_NAME_PATTERN, NamedToolChoice, ToolChoice, ToolSpec

_TOOL_NAME = re.compile(TOOL_NAME_PATTERN)


def _bad(where: str, problem: str) -> InvalidRequest:
    return InvalidRequest(f"{where} {problem}.", param=where)


def tools_from_responses(items: Any) -> list[ToolSpec]:
    """Client function tools in the Responses shape `{type: "function", name, parameters}`."""
    if items is None:
        return []
    if not isinstance(items, list):
        raise _bad("tools", "must be an array")
    specs: list[ToolSpec] = []
    for n, item in enumerate(items):
        where = f"tools[{n}]"
        if not isinstance(item, Mapping) or item.get("type") != "function":
            kind = item.get("type") if isinstance(item, Mapping) else None
            raise _bad(where, f"must be a function tool; {kind!r} tools are not supported here")
        name = item.get("name")
        if not isinstance(name, str) or not _TOOL_NAME.fullmatch(name):
            raise _bad(where, "needs `name` of 1-64 letters, digits, '_' or '-'")
        description = item.get("description") or ""
        parameters = item.get("parameters") or {"type": "object", "properties": {}}
        if not isinstance(description, str):
            raise _bad(where, "has a `description` that is not a string")
        if not isinstance(parameters, Mapping):
            raise _bad(where, "needs `parameters` as a JSON schema object")
        specs.append(ToolSpec(name=name, description=description, parameters=dict(parameters)))
    names = [s.name for s in specs]
    if len(set(names)) != len(names):
        raise _bad("tools", "declares the same name twice")
    return specs


def tool_choice_from_responses(value: Any) -> ToolChoice | None:
    if value is None or value in ("auto", "none", "required"):
        return value  # type: ignore[no-any-return]
    name = value.get("name") if isinstance(value, Mapping) else None
    if not isinstance(value, Mapping) or value.get("type") != "function" or not name:
        raise _bad("tool_choice", "must be auto, none, required or {type: 'function', name}")
    return NamedToolChoice(name=str(name))
