"""A stream's response built by `LeanEventSourceResponse` itself has what sse-starlette's
constructor would have given it, attribute for attribute, for the arguments the service
passes; anything else is still sse-starlette's to build."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from sse_starlette.event import ServerSentEvent
from sse_starlette.sse import EventSourceResponse

from app.api import sse_lean
from app.api.sse_lean import LeanEventSourceResponse
from app.api.streaming import SSE_HEADERS

pytestmark = pytest.mark.skipif(not sse_lean.LEAN_AVAILABLE, reason="sse-starlette's own")


async def _events() -> AsyncIterator[str]:
    yield "x"


def _ping() -> ServerSentEvent:
    return ServerSentEvent(comment="ping")


async def _closed(_message: object) -> None:
    return None


SERVICE_ARGUMENTS: list[dict[str, Any]] = [
    {
        "headers": SSE_HEADERS,
        "ping": 15,
        "ping_message_factory": _ping,
        "client_close_handler_callable": _closed,
        "send_timeout": 30.0,
        "sep": "\n",
    },
    {"headers": {"Cache-Control": "no-cache"}, "ping": 0, "send_timeout": None},
    {},
]


def _attributes(response: EventSourceResponse) -> dict[str, Any]:
    found = dict(vars(response))
    del found["body_iterator"], found["_send_lock"]
    return found


@pytest.mark.parametrize("arguments", SERVICE_ARGUMENTS)
async def test_a_response_has_the_attributes_sse_starlettes_constructor_gives(
    arguments: dict[str, Any],
) -> None:
    LeanEventSourceResponse(_events(), **arguments)  # the first of its headers
    lean = LeanEventSourceResponse(_events(), **arguments)
    theirs = EventSourceResponse(_events(), **arguments)
    assert _attributes(lean) == _attributes(theirs)
    assert type(lean._send_lock).__module__ == "asyncio.locks"


async def test_the_second_response_of_the_same_headers_skips_sse_starlettes_constructor(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    LeanEventSourceResponse(_events(), **SERVICE_ARGUMENTS[0])
    built: list[object] = []
    original = EventSourceResponse.__init__

    def counted(self: EventSourceResponse, *args: Any, **kwargs: Any) -> None:
        built.append(self)
        original(self, *args, **kwargs)

    monkeypatch.setattr(EventSourceResponse, "__init__", counted)
    LeanEventSourceResponse(_events(), **SERVICE_ARGUMENTS[0])
    assert built == []
    LeanEventSourceResponse(_events(), **SERVICE_ARGUMENTS[0], status_code=201)
    assert len(built) == 1  # an argument the lean constructor does not set


async def test_a_header_list_is_the_responses_own() -> None:
    first = LeanEventSourceResponse(_events(), headers=SSE_HEADERS)
    second = LeanEventSourceResponse(_events(), headers=SSE_HEADERS)
    second.headers["x-extra"] = "1"
    assert b"x-extra" not in dict(first.raw_headers)
    third = LeanEventSourceResponse(_events(), headers=SSE_HEADERS)
    assert b"x-extra" not in dict(third.raw_headers)
