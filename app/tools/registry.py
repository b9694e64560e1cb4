"""The tool registry: every server tool this deployment has, by name.

Deployers add tools without editing chat-bff: a tool module exposes `register(registry)`
(see `app.tools.modules`). Who may use which registered tool is `app.tools.access`.
"""

from __future__ import annotations

import re
from typing import Any

from app.domain.stream import TOOL_NAME_PATTERN
from app.tools.base import ServerTool

_NAME = re.compile(TOOL_NAME_PATTERN)


class ToolRegistry:
    def __init__(self) -> None:
        self._tools: dict[str, ServerTool[Any]] = {}

    def register(self, tool: ServerTool[Any]) -> None:
        if not _NAME.fullmatch(tool.name):
            raise ValueError(f"tool name {tool.name!r} must match {_NAME.pattern}")
        if tool.name in self._tools:
            raise ValueError(f"tool {tool.name!r} is registered twice")
        if tool.args_model.model_config.get("extra") != "forbid":
            raise ValueError(
                f"tool {tool.name!r}: its arguments model must forbid extra fields "
                "(derive it from app.tools.base.ToolArgs)"
            )
        self._tools[tool.name] = tool

    def unregister(self, name: str) -> None:
        """Remove a tool (a tool source's server went away or changed its list)."""
        self._tools.pop(name, None)

    def get(self, name: str) -> ServerTool[Any] | None:
        return self._tools.get(name)

    def all(self) -> list[ServerTool[Any]]:
        return list(self._tools.values())

    def __contains__(self, name: object) -> bool:
        return name in self._tools
