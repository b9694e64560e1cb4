"""A deployer's tool module, as `TOOL_MODULES` would name it."""

from __future__ import annotations

from pydantic import Field

from app.tools.base import ServerTool, ToolArgs, ToolContext
from app.tools.registry import ToolRegistry


class RestartArgs(ToolArgs):
    service: str = Field(description="Service to restart.")


async def restart(args: RestartArgs, ctx: ToolContext) -> dict[str, str]:
    return {"restarted": args.service}


def register(registry: ToolRegistry) -> None:
    registry.register(
        ServerTool(
            name="restart_service",
            description="Restart a service.",
            args_model=RestartArgs,
            handler=restart,
            policy="confirm",
            roles=frozenset({"admin"}),
        )
    )
