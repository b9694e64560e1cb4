"""Server tools for loop tests, loaded the way a deployer's module is (TOOL_MODULES)."""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic import Field

from app.tools.base import ServerTool, ToolArgs, ToolContext
from app.tools.registry import ToolRegistry


class AddArgs(ToolArgs):
    a: int = Field(description="First number.")
    b: int = Field(description="Second number.")


class NoArgs(ToolArgs):
    pass


async def add(args: AddArgs, ctx: ToolContext) -> dict[str, Any]:
    return {"sum": args.a + args.b}


async def slow(args: NoArgs, ctx: ToolContext) -> str:
    await asyncio.sleep(30)
    return "never"


async def boom(args: NoArgs, ctx: ToolContext) -> str:
    raise RuntimeError("the tool broke")


def register(registry: ToolRegistry) -> None:
    registry.register(
        ServerTool(name="add", description="Add two numbers.", args_model=AddArgs, handler=add)
    )
    registry.register(
        ServerTool(
            name="slow", description="Takes too long.", args_model=NoArgs, handler=slow, timeout=0.2
        )
    )
    registry.register(
        ServerTool(name="boom", description="Always fails.", args_model=NoArgs, handler=boom)
    )
