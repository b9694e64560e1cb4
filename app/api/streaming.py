"""Serving a run's event log as an SSE response.

The response only reads the log (the run is a separate task), so a disconnect never
loses an event; a stateless run asked to stop with its reader gets cancelled here.

Backpressure: events are encoded one at a time and written in pieces of at most
`CHUNK_BYTES`; each piece waits for the socket (the server's flow control), so a reader
that stalls holds its transport buffer and one piece, whatever the run's length. A large
event (a long answer's `message_end`) is sent in slices of the one buffer every reader
shares (`SequencedEvent.json`).

Shutdown: when the service drains, the log ends early for runs this process does not
run to their end; a stream that ends without its run's `run_end` then gets the wire's
`farewell` frame (a retryable error saying where to resume), so no client is cut
without a last word.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from sse_starlette.event import ServerSentEvent
from sse_starlette.sse import EventSourceResponse

from app.api.drain import Drain
from app.api.sse_lean import LEAN_AVAILABLE, LeanEventSourceResponse
from app.api.stream_head import HeldHead
from app.domain.events import SequencedEvent

CHUNK_BYTES = 16 * 1024


@dataclass(frozen=True)
class StreamConfig:
    """How this deployment streams. Built from settings by `create_app`."""

    heartbeat_seconds: float = 15.0
    # A reader whose socket takes nothing for this long is dropped (it can resume).
    send_timeout_seconds: float = 60.0
    drain: Drain = field(default_factory=Drain)


SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}

# An encoder gives bytes, or pieces of bytes it shares with other readers.
Encoded = bytes | Sequence[bytes]
Encoder = Callable[[list[SequencedEvent]], Encoded]


def _heartbeat() -> ServerSentEvent:
    return ServerSentEvent(comment="heartbeat")


def _pieces(encoded: Encoded) -> Sequence[bytes]:
    return (encoded,) if isinstance(encoded, bytes) else encoded


def _slices(piece: bytes) -> Iterator[bytes]:
    view = memoryview(piece)
    for start in range(0, len(piece), CHUNK_BYTES):
        yield bytes(view[start : start + CHUNK_BYTES])


def _chunks(batch: list[SequencedEvent], encode: Encoder) -> Iterator[bytes]:
    """The batch's frames, coalesced into writes of at most CHUNK_BYTES."""
    out: list[bytes] = []
    size = 0
    for item in batch:
        for piece in _pieces(encode([item])):
            if size + len(piece) <= CHUNK_BYTES:
                out.append(piece)
                size += len(piece)
                continue
            if out:
                yield b"".join(out)
                out, size = [], 0
            if len(piece) <= CHUNK_BYTES:
                out, size = [piece], len(piece)
            else:
                yield from _slices(piece)
    if out:
        yield b"".join(out)


def sse_response(
    batches: AsyncIterator[list[SequencedEvent]],
    encode: Encoder,
    config: StreamConfig,
    *,
    on_disconnect: Callable[[], Awaitable[Any]] | None = None,
    farewell: Callable[[], bytes] | None = None,
    retry_ms: int | None = None,
    head: HeldHead | None = None,
) -> EventSourceResponse:
    """`retry_ms` (for resumable streams) rides in the first event's block: a browser's
    EventSource then reconnects after that long instead of its default 3 s, and readers
    that surface every block (httpx-sse) see no extra empty event. `head` holds the
    response's start until the run says something (`app.api.stream_head`)."""
    if head is not None and LEAN_AVAILABLE:
        batches = head.batches(batches)
    else:
        head = None  # sse-starlette's own response cannot hold its start

    async def body() -> AsyncIterator[bytes]:
        prefix = b"retry: %d\n" % retry_ms if retry_ms is not None else b""
        ended = False
        async for batch in batches:
            for chunk in _chunks(batch, encode):
                if prefix:
                    chunk, prefix = prefix + chunk, b""
                yield chunk
            ended = ended or batch[-1].type == "run_end"
        if not ended and config.drain.draining and farewell is not None:
            yield farewell()

    async def disconnected(_message: object) -> None:
        if on_disconnect is not None:
            await on_disconnect()

    response = LeanEventSourceResponse(
        body(),
        headers=SSE_HEADERS,
        ping=config.heartbeat_seconds,
        ping_message_factory=_heartbeat,
        client_close_handler_callable=disconnected,
        send_timeout=config.send_timeout_seconds,
        sep="\n",
    )
    response.head = head
    return response
