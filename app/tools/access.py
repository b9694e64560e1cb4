"""Who may use which tool: allow and deny lists per deployment and per model, and roles.

The lists take `fnmatch` patterns (the container fills them from `TOOL_ALLOW` /
`TOOL_DENY` and, per model id, `TOOL_MODEL_ALLOW` / `TOOL_MODEL_DENY`), so
server-management tools can be kept away from every model, or from one. A tool a caller
may not use is never shown to its model, and a call to it is refused.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any

from app.domain.identity import Caller
from app.tools.base import ServerTool


def _matches(name: str, patterns: Iterable[str]) -> bool:
    return any(fnmatchcase(name, p) for p in patterns)


@dataclass(frozen=True)
class ToolAccess:
    """Allow and deny lists per deployment and per model, plus each tool's roles."""

    allow: tuple[str, ...] | None = None
    deny: tuple[str, ...] = ()
    model_allow: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    model_deny: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

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
