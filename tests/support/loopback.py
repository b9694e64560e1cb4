"""An app already started (its lifespan running) behind a real HTTP server on loopback.

For behaviour that lives on the wire: what a real client sends (raw bytes, headers an
in-process ASGI client would tidy up) and streams that an ASGI client does not stream."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import uvicorn
from fastapi import FastAPI


@asynccontextmanager
async def served(app: FastAPI) -> AsyncIterator[str]:
    """The base URL of `app` behind uvicorn on a free loopback port."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, lifespan="off", log_level="warning"))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        await asyncio.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task
