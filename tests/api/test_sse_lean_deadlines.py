"""An open lean stream waits for its heartbeat and its sends on the shared deadline heap
(one loop timer for every stream), and lets go of them when the client hangs up."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, MutableMapping
from typing import Any

import pytest

from app.api.sse_lean import LEAN_AVAILABLE, LeanEventSourceResponse
from app.domain import deadlines
from tests.support.asgi_stream import post_scope


async def _never_ends() -> AsyncIterator[str]:
    yield "first"
    await asyncio.Event().wait()


@pytest.mark.skipif(not LEAN_AVAILABLE, reason="sse-starlette serves every stream itself")
async def test_open_streams_keep_their_heartbeats_on_the_shared_heap_until_they_close() -> None:
    sent: list[MutableMapping[str, Any]] = []
    gone = asyncio.Event()

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message)

    async def receive() -> MutableMapping[str, Any]:
        await gone.wait()
        return {"type": "http.disconnect"}

    before = deadlines.counts()[0]
    streams = [
        asyncio.ensure_future(
            LeanEventSourceResponse(_never_ends(), ping=15)(post_scope("/x"), receive, send)
        )
        for _ in range(50)
    ]
    while sum(1 for m in sent if m.get("body")) < 50:
        await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert deadlines.counts()[0] - before == 50  # one heartbeat deadline a stream
    gone.set()
    await asyncio.gather(*streams)
    assert deadlines.counts()[0] == before
