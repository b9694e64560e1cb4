"""Serving a run's event log as an SSE response.

The response only reads the log (the run is a separate task), so a disconnect never
loses an event; a stateless run asked to stop with its reader gets cancelled here.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from sse_starlette.event import ServerSentEvent
from sse_starlette.sse import EventSourceResponse

from app.domain.events import SequencedEvent


@dataclass(frozen=True)
class StreamConfig:
    """How this deployment streams: the heartbeat that keeps proxies from closing idle
    streams. Built from settings by `create_app`."""

    heartbeat_seconds: float = 15.0


SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}

Encoder = Callable[[list[SequencedEvent]], bytes]


def _heartbeat() -> ServerSentEvent:
    return ServerSentEvent(comment="heartbeat")


def sse_response(
    batches: AsyncIterator[list[SequencedEvent]],
    encode: Encoder,
    *,
    heartbeat: float,
    on_disconnect: Callable[[], Awaitable[Any]] | None = None,
    trailer: bytes | None = None,
    retry_ms: int | None = None,
) -> EventSourceResponse:
    """`retry_ms` (for resumable streams) rides in the first event's block: a browser's
    EventSource then reconnects after that long instead of its default 3 s, and readers
    that surface every block (httpx-sse) see no extra empty event."""

    async def body() -> AsyncIterator[bytes]:
        prefix = b"retry: %d\n" % retry_ms if retry_ms is not None else b""
        async for batch in batches:
            chunk = encode(batch)
            if prefix and chunk:
                chunk, prefix = prefix + chunk, b""
            yield chunk
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
