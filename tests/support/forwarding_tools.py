"""Tools that call a downstream API as the user (loaded like a deployer's TOOL_MODULES).

`DOWNSTREAM` is the fake downstream's base URL, set by the test that starts it."""

from __future__ import annotations

from typing import Any

import httpx

from app.tools.base import ServerTool, ToolArgs, ToolContext, ToolFailure
from app.tools.registry import ToolRegistry

DOWNSTREAM = {"url": ""}


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
