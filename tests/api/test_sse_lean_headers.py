"""An open stream's response lets go of its header list once the start has carried it:
the client gets the same headers, and for the rest of the stream (minutes, for a slow
answer) the response keeps no list of them (~0.6 KB a stream)."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import AsyncIterator, MutableMapping
from typing import Any

from app.api.sse_lean import LeanEventSourceResponse
from tests.support.asgi_stream import body_then_wait, post_scope


async def test_the_header_list_goes_with_the_start_and_stays_nowhere_else() -> None:
    sent: list[MutableMapping[str, Any]] = []
    more = asyncio.Event()

    async def events() -> AsyncIterator[str]:
        yield "first"
        await more.wait()
        yield "second"

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message)

    response = LeanEventSourceResponse(events())
    served = asyncio.create_task(response(post_scope("/x"), body_then_wait(b""), send))
    while not any(m.get("body") for m in sent):
        await asyncio.sleep(0)

    start = sent[0]
    assert start["type"] == "http.response.start"
    names = [name for name, _ in start["headers"]]
    assert b"content-type" in names and b"cache-control" in names
    held_by = gc.get_referrers(start["headers"])
    assert not any(holder is response or holder is vars(response) for holder in held_by)

    more.set()
    await served
    assert b"data: second" in b"".join(m.get("body", b"") for m in sent)
