"""The server tools of this deployment as one caller, with one model, may see them.

The registry says what exists, `ToolAccess` who may use it; the catalog answers the
questions the rest of the service asks: which tools to offer a model (`specs`), whether a
tool name is the server's (`knows`: otherwise the call belongs to the client), whether this
caller may run it now (`permitted`), and how a stored call's arguments are shown.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app.domain.identity import Caller
from app.domain.stream import ToolSpec
from app.tools.access import ToolAccess
from app.tools.base import ServerTool, visible_args
from app.tools.registry import ToolRegistry


class ToolCatalog:
    def __init__(self, registry: ToolRegistry, access: ToolAccess | None = None) -> None:
        self.registry = registry
        self.access = access or ToolAccess()

    def available(self, caller: Caller, model_id: str = "") -> list[ServerTool[Any]]:
        return [t for t in self.registry.all() if self.access.permits(t, caller, model_id)]

    def specs(self, caller: Caller, model_id: str = "") -> list[ToolSpec]:
        return [
            ToolSpec(name=t.name, description=t.description, parameters=t.parameters_schema())
            for t in self.available(caller, model_id)
        ]

    def may_pause(self) -> frozenset[str]:
        """The tools whose calls may wait for a person: every call of a `confirm` tool
        waits for an approval, and a tool that `asks` may stop for the user's answer. A
        wire that must not show such a call running before it is known to run asks here."""
        return frozenset(t.name for t in self.registry.all() if t.policy == "confirm" or t.asks)

    def knows(self, name: str) -> bool:
        return name in self.registry and self.access.offered(name)

    def permitted(self, name: str, caller: Caller, model_id: str = "") -> ServerTool[Any] | None:
        tool = self.registry.get(name)
        if tool is None or not self.access.permits(tool, caller, model_id):
            return None
        return tool

    def shown_args(self, tool_name: str, args: Mapping[str, Any]) -> dict[str, Any]:
        """A stored call's arguments as its owner sees them (see `visible_args`)."""
        return visible_args(self.registry.get(tool_name), args)
