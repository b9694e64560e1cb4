"""The router's view of a registry, and the capabilities tool it always offers.

`list_capabilities` answers what this deployment's tools can do (those the caller may
use), so a model offered a few tools can still tell the user what else there is.
"""

from __future__ import annotations

from typing import Any

from app.routing.keywords import RoutedTool
from app.routing.router import CAPABILITIES_TOOL
from app.tools.base import ServerTool, ToolArgs, ToolContext
from app.tools.registry import ToolRegistry


def routed_tools(registry: ToolRegistry) -> list[RoutedTool]:
    return [
        RoutedTool(
            name=t.name,
            description=t.description,
            keywords=t.keywords,
            examples=t.examples,
            mutates=t.mutates,
        )
        for t in registry.all()
    ]


class CapabilitiesArgs(ToolArgs):
    pass


def capabilities_tool(registry: ToolRegistry) -> ServerTool[CapabilitiesArgs]:
    async def handler(_: CapabilitiesArgs, ctx: ToolContext) -> dict[str, Any]:
        return {
            "tools": [
                {"name": t.name, "description": t.description}
                for t in registry.all()
                if t.name != CAPABILITIES_TOOL and t.allows_roles(ctx.caller.roles)
            ]
        }

    return ServerTool(
        name=CAPABILITIES_TOOL,
        description=(
            "List every tool this assistant has, with what each does. Use it when the user "
            "asks what you can do, or when none of the offered tools fits the request."
        ),
        args_model=CapabilitiesArgs,
        handler=handler,
        keywords=("capabilities", "help", "what can you do", "умеешь", "возможности"),
        examples=("Что ты умеешь? Какие есть инструменты и возможности?",),
    )
