"""Tools that call a downstream API as the user (loaded like a deployer's TOOL_MODULES).

`DOWNSTREAM` is the fake downstream's base URL, set by the test that starts it."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from app.tools.base import ServerTool, ToolArgs, ToolContext, ToolFailure
from app.tools.registry import ToolRegistry

DOWNSTREAM = {"url": ""}
# How long the long-running ones work before they call (a test makes the first attempt
# outlast its process, and the one after the restart quick).
SLOW = {"seconds": 0.0}


class NoArgs(ToolArgs):
    pass


async def my_orders(args: NoArgs, ctx: ToolContext) -> Any:
    if ctx.identity is None:
        raise ToolFailure("no identity")
    async with httpx.AsyncClient() as client:
        response = await client.get(f"{DOWNSTREAM['url']}/orders", headers=ctx.identity.headers())
    if response.status_code != 200:
        raise ToolFailure(f"the orders API said {response.status_code}")
    return response.json()


async def slow_orders(args: NoArgs, ctx: ToolContext) -> Any:
    await asyncio.sleep(SLOW["seconds"])
    return await my_orders(NoArgs(), ctx)


def register(registry: ToolRegistry) -> None:
    registry.register(
        ServerTool(
            name="my_orders",
            description="The user's orders, from the orders API, as the user.",
            args_model=NoArgs,
            handler=my_orders,
            forward_identity="minted",
            audience="orders-api",
        )
    )
    registry.register(
        ServerTool(
            name="my_orders_bearer",
            description="The user's orders, passing the user's own token on.",
            args_model=NoArgs,
            handler=my_orders,
            forward_identity="bearer",
            audience="orders-api",
        )
    )
    for mode in ("minted", "bearer"):  # long-running: a restart runs them again
        registry.register(
            ServerTool(
                name=f"slow_orders_{mode}",
                description="The user's orders, after long work, as the user.",
                args_model=NoArgs,
                handler=slow_orders,
                forward_identity=mode,
                audience="orders-api",
                long_running=True,
                resumable=True,
            )
        )
