"""The tool registry, built from settings, and who may use which tool.

Deployers add tools without editing chat-bff: `TOOL_MODULES` lists importable modules that
expose `register(registry)`. `TOOL_ALLOW` / `TOOL_DENY` (deployment) and
`TOOL_MODEL_ALLOW` / `TOOL_MODEL_DENY` (per model id) take `fnmatch` patterns, so
server-management tools can be kept away from every model, or from one.
A tool a caller may not use is never shown to its model, and a call to it is refused.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any

from app.domain.identity import Caller
from app.settings import Settings
from app.tools.base import ServerTool

_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


class ToolRegistry:
    def __init__(self) -> None:
        self._tools: dict[str, ServerTool[Any]] = {}

    def register(self, tool: ServerTool[Any]) -> None:
        if not _NAME.match(tool.name):
            raise ValueError(f"tool name {tool.name!r} must match {_NAME.pattern}")
        if tool.name in self._tools:
            raise ValueError(f"tool {tool.name!r} is registered twice")
        if tool.args_model.model_config.get("extra") != "forbid":
            raise ValueError(
                f"tool {tool.name!r}: its arguments model must forbid extra fields "
                "(derive it from app.tools.base.ToolArgs)"
            )
        self._tools[tool.name] = tool

    def get(self, name: str) -> ServerTool[Any] | None:
        return self._tools.get(name)

    def all(self) -> list[ServerTool[Any]]:
        return list(self._tools.values())

    def __contains__(self, name: object) -> bool:
        return name in self._tools


def _matches(name: str, patterns: Iterable[str]) -> bool:
    return any(fnmatchcase(name, p) for p in patterns)


@dataclass(frozen=True)
class ToolAccess:
    """Allow and deny lists per deployment and per model, plus each tool's roles."""

    allow: tuple[str, ...] | None = None
    deny: tuple[str, ...] = ()
    model_allow: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    model_deny: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @classmethod
    def from_settings(cls, settings: Settings) -> ToolAccess:
        return cls(
            allow=tuple(settings.tool_allow) if settings.tool_allow is not None else None,
            deny=tuple(settings.tool_deny),
            model_allow={k: tuple(v) for k, v in settings.tool_model_allow.items()},
            model_deny={k: tuple(v) for k, v in settings.tool_model_deny.items()},
        )

    def offered(self, name: str) -> bool:
        """Whether the deployment offers the tool at all."""
        if _matches(name, self.deny):
            return False
        return self.allow is None or _matches(name, self.allow)

    def permits(self, tool: ServerTool[Any], caller: Caller, model_id: str = "") -> bool:
        if not self.offered(tool.name) or not tool.allows_roles(caller.roles):
            return False
        if _matches(tool.name, self.model_deny.get(model_id, ())):
            return False
        only = self.model_allow.get(model_id)
        return only is None or _matches(tool.name, only)


def example_tools_enabled(settings: Settings) -> bool:
    if settings.example_tools_enabled is not None:
        return settings.example_tools_enabled
    return settings.environment == "development"


def build_registry(settings: Settings) -> ToolRegistry:
    """The registry for this deployment: the example toolset (if on) and deployer modules."""
    registry = ToolRegistry()
    if example_tools_enabled(settings):
        from app.tools import graph

        graph.register(registry)
    for module_name in settings.tool_modules:
        module = importlib.import_module(module_name)
        register = getattr(module, "register", None)
        if not callable(register):
            raise ValueError(f"TOOL_MODULES: {module_name!r} has no register(registry)")
        register(registry)
    return registry
