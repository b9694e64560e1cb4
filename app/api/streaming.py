"""Serving a run's event log as an SSE response.

The response only reads the log (the run is a separate task), so a disconnect never
loses an event; a stateless run asked to stop with its reader gets cancelled here.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable

from sse_starlette.event import ServerSentEvent
from sse_starlette.sse import EventSourceResponse

from app.domain.events import SequencedEvent

SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}

Encoder = Callable[[list[SequencedEvent]], bytes]


def _heartbeat() -> ServerSentEvent:
    return ServerSentEvent(comment="heartbeat")


def sse_response(
    batches: AsyncIterator[list[SequencedEvent]],
    encode: Encoder,
    *,
    heartbeat: float,
    on_disconnect: Callable[[], Awaitable[None]] | None = None,
    trailer: bytes | None = None,
) -> EventSourceResponse:
    async def body() -> AsyncIterator[bytes]:
        async for batch in batches:
            yield encode(batch)
        if trailer is not None:
            yield trailer

    async def disconnected(_message: object) -> None:
        if on_disconnect is not None:
            await on_disconnect()

    return EventSourceResponse(
        body(),
        headers=SSE_HEADERS,
        ping=heartbeat,
        ping_message_factory=_heartbeat,
        client_close_handler_callable=disconnected,
    )
