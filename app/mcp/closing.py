"""Leaving an MCP connection in bounded time, with its resources released.

Closing a connection says goodbye to the server: over HTTP the SDK sends a `DELETE` for the
session (the older handshake has one), with the HTTP client's 300 s read timeout; over stdio
it closes stdin and waits for the process, then kills it (bounded by the SDK). A server that
froze (stopped, not dead: its socket still accepts) never answers the `DELETE`, so an
unbounded close kept the supervisor, and a call on a connection of its own, waiting for
minutes. Past `grace` the close is cancelled where it waits: the transport's task group
cancels its stream tasks, and the contexts below it on the stack (the HTTP client, whose
sockets close) still run. Contexts must be left in the task that entered them (anyio's
cancel scopes), so the close is cut in place rather than handed to another task.
"""

from __future__ import annotations

import asyncio
import logging
from contextlib import AsyncExitStack

log = logging.getLogger("chat_bff.mcp")


async def leave(
    stack: AsyncExitStack, grace: float, server: str, exc: BaseException | None = None
) -> bool:
    """Exit `stack` as `async with` would on `exc` (None: a normal exit), within `grace`;
    True when `exc` is suppressed (an SDK cancel scope's own cancellation). Running out of
    `grace` cuts the connection (a line says so); the caller raises `exc` on.
    """
    timeout = asyncio.timeout(grace)
    try:
        async with timeout:
            if exc is None:
                await stack.aclose()
                return False
            return bool(await stack.__aexit__(type(exc), exc, exc.__traceback__))
    except TimeoutError:
        if not timeout.expired():
            raise
        log.warning(
            "MCP server did not close its connection in time: it was cut",
            extra={"mcp_server": server, "grace": grace},
        )
        return False
