"""An app already started (its lifespan running) behind a real HTTP server on loopback.

For behaviour that lives on the wire: what a real client sends (raw bytes, headers an
in-process ASGI client would tidy up) and streams that an ASGI client does not stream."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Literal

import uvicorn
from fastapi import FastAPI


@asynccontextmanager
async def serving(
    app: Any,
    *,
    http: type[asyncio.Protocol] | str = "auto",
    date_header: bool = True,
    lifespan: Literal["auto", "on", "off"] = "off",
) -> AsyncIterator[tuple[uvicorn.Server, int]]:
    """`app` behind uvicorn (its HTTP protocol `http`) on a free loopback port: the server
    and the port."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    config = uvicorn.Config(
        app, http=http, lifespan=lifespan, log_level="warning", date_header=date_header
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        while not server.started:
            await asyncio.sleep(0.01)
        yield server, sock.getsockname()[1]
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 10)
        sock.close()


@asynccontextmanager
async def served(app: FastAPI) -> AsyncIterator[str]:
    """The base URL of `app` behind uvicorn on a free loopback port."""
    async with serving(app) as (_, port):
        yield f"http://127.0.0.1:{port}"
