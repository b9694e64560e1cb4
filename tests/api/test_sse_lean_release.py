"""A stream whose watcher failed (a disconnect handler that raised, a heartbeat that
timed out) raises that error to the server and leaves nothing behind it in a reference
cycle: the response and what it holds are freed as soon as the error is handled, not at
a full collection, which while serving is rare."""

from __future__ import annotations

import asyncio
import gc
import weakref
from collections.abc import AsyncIterator, MutableMapping
from typing import Any

import pytest

from app.api.sse_lean import LEAN_AVAILABLE, LeanEventSourceResponse
from tests.support.asgi_stream import post_scope


class HandlerFailed(Exception):
    pass


async def _never_ends() -> AsyncIterator[str]:
    yield "first"
    await asyncio.Event().wait()


async def _failing_handler(_message: MutableMapping[str, Any]) -> None:
    raise HandlerFailed


def _hangs_up_after_first_event(sent: list[MutableMapping[str, Any]]) -> Any:
    async def receive() -> MutableMapping[str, Any]:
        while not any(m.get("body") for m in sent):
            await asyncio.sleep(0)
        return {"type": "http.disconnect"}

    return receive


async def _raised(call: Any) -> type[BaseException] | None:
    """The type of what `call` raised, the error itself let go."""
    try:
        await call
    except Exception as exc:
        return type(exc)
    return None


@pytest.mark.skipif(not LEAN_AVAILABLE, reason="sse-starlette serves every stream itself")
async def test_a_failed_watcher_error_reaches_the_server_and_frees_the_response() -> None:
    sent: list[MutableMapping[str, Any]] = []

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message)

    response = LeanEventSourceResponse(
        _never_ends(), client_close_handler_callable=_failing_handler
    )
    freed = weakref.ref(response)
    gc.collect()
    gc.disable()
    try:
        raised = await _raised(response(post_scope("/x"), _hangs_up_after_first_event(sent), send))
        assert raised is HandlerFailed
        del response
        for _ in range(3):
            await asyncio.sleep(0)
        assert freed() is None
    finally:
        gc.enable()
    assert b"data: first" in b"".join(m.get("body", b"") for m in sent)
