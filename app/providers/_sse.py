"""Server-sent events read straight from a response body, for the providers' streams.

Why not the SDKs' own streams: they build a typed pydantic object per event, which our
translators turn straight back into a dict; that was about half of the service's CPU
per streamed chunk. The SDK still sends the request, retries it and maps HTTP errors;
from the first byte of a 200 body on, the provider reads the bytes through this module
and parses each event's data with `json.loads`.

The decoder keeps the parts of the WHATWG event-stream rules a model API can exercise:
lines end in LF, CRLF or a lone CR (also when a CRLF is split across two reads); a blank
line ends an event; `:` lines are comments (keep-alives); several `data:` lines join with
LF; an event without a `data:` line is not dispatched; a leading BOM is skipped; a
partial event at the end of the body is dropped. `id` and `retry` are ignored: a model
stream is never resumed.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable
from contextlib import aclosing
from typing import NamedTuple, Protocol, cast

import httpx2

from app.providers.errors import TRANSPORT_FAILURES
from app.providers.transport import UpstreamBody

_BOM = b"\xef\xbb\xbf"
# One event's bytes at most (a tool call's whole arguments can come in one): far above any
# real model's frame, below what a broken upstream could make a process hold.
MAX_EVENT_BYTES = 32 * 1024 * 1024
_DRAIN_SECONDS = 0.1
# Ends a drain without an error: the answer is complete by then.
_DRAIN_ENDS: tuple[type[BaseException], ...] = (TimeoutError, *TRANSPORT_FAILURES)


class Body(Protocol):
    """A response body being read: an async iterator of its bytes that can be closed."""

    def __aiter__(self) -> AsyncIterator[bytes]: ...

    def __anext__(self) -> Awaitable[bytes]: ...

    async def aclose(self) -> None: ...


class SSEvent(NamedTuple):
    """One dispatched event: its `event:` name (b"" when it had none) and its data."""

    event: bytes
    data: bytes


class EventTooLarge(ValueError):
    """An event grew past `MAX_EVENT_BYTES` without ending: the upstream is broken."""


class SSEDecoder:
    """Incremental: `feed` each network read, get back the events it completed.

    An event still open is held as the reads that brought it, joined once it ends: only
    each new read is searched for the blank line, so an event of n bytes in k reads
    costs O(n), not the O(n * k) of joining and rescanning the whole of it per read
    (a 8 MB event took 4 s of CPU, the event loop blocked). One that passes
    `MAX_EVENT_BYTES` raises `EventTooLarge` (the providers answer it as a response they
    could not read): a body that never ends its event must not hold memory without bound.
    """

    __slots__ = ("_held", "_held_bytes", "_skip_lf", "_started")

    def __init__(self) -> None:
        self._held: list[bytes] = []  # the open event's reads, not yet joined
        self._held_bytes = 0
        self._skip_lf = False  # the last read ended in CR: a leading LF is its CRLF's end
        self._started = False

    def feed(self, chunk: bytes) -> list[SSEvent]:
        chunk = self._line_ends(chunk)
        if not chunk:
            return []
        if self._held:
            if b"\n\n" not in chunk and self._held[-1][-1:] + chunk[:1] != b"\n\n":
                return self._hold(chunk)  # the open event goes on
            buffer = b"".join([*self._held, chunk])
            self._held, self._held_bytes = [], 0
        else:
            buffer = chunk
        if not self._started:
            if len(buffer) < len(_BOM) and _BOM.startswith(buffer):
                return self._hold(buffer)  # perhaps a BOM split across reads
            self._started = True
            if buffer.startswith(_BOM):
                buffer = buffer[len(_BOM) :]
        if b"\n\n" not in buffer:
            return self._hold(buffer)
        blocks = buffer.split(b"\n\n")
        rest = blocks.pop()
        if rest:
            self._hold(rest)
        return _events(blocks)

    def _line_ends(self, chunk: bytes) -> bytes:
        """`chunk` with CRLF and lone CR as LF (an empty read changes nothing)."""
        if self._skip_lf and chunk:
            self._skip_lf = False
            if chunk[:1] == b"\n":
                chunk = chunk[1:]
        if b"\r" in chunk:
            self._skip_lf = chunk[-1:] == b"\r"
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        return chunk

    def _hold(self, piece: bytes) -> list[SSEvent]:
        self._held.append(piece)
        self._held_bytes += len(piece)
        if self._held_bytes > MAX_EVENT_BYTES:
            raise EventTooLarge(f"an event of the stream passed {MAX_EVENT_BYTES} bytes")
        return []


def _events(blocks: list[bytes]) -> list[SSEvent]:
    events: list[SSEvent] = []
    for block in blocks:
        if block[:6] == b"data: " and b"\n" not in block:
            # The shape nearly every frame has: one `data: ` line, nothing else.
            events.append(SSEvent(b"", block[6:]))
        else:
            event = _parse_block(block)
            if event is not None:
                events.append(event)
    return events


def _parse_block(block: bytes) -> SSEvent | None:
    name = b""
    data: list[bytes] = []
    for line in block.split(b"\n"):
        if not line or line[:1] == b":":
            continue
        field, _, value = line.partition(b":")
        if value[:1] == b" ":
            value = value[1:]
        if field == b"data":
            data.append(value)
        elif field == b"event":
            name = value
    if not data:
        return None
    return SSEvent(name, b"\n".join(data))


def is_blank(data: bytes) -> bool:
    """Data with nothing to parse (`data:` alone, or spaces): a keep-alive, not an error."""
    return not data.strip()


def body(response: httpx2.Response) -> Body:
    """`response`'s body as it arrives, read below httpx's per-chunk layers when it can be.

    A body without a content-encoding (every model API's SSE in practice) is iterated
    straight from the transport's stream: `aiter_bytes` would add two generators per
    network read (`aiter_raw`, then a decoder and a chunker that pass identity bytes
    through). A compressed body still goes through `aiter_bytes`, which decodes it.
    Either way the caller closes the response.
    """
    _let_go_of_request(response)
    encoding = response.headers.get("content-encoding", "identity").strip().lower()
    stream = response.stream
    if encoding not in ("identity", "") or not isinstance(stream, httpx2.AsyncByteStream):
        return response.aiter_bytes()
    response.is_stream_consumed = True  # as aiter_raw marks it: no second reader
    # Our transport's body is read as it is, not through httpx's bound stream around it
    # (one more generator parked beside every open stream); closing the response still
    # goes through httpx's, which times the response.
    inner = getattr(stream, "_stream", None)
    if isinstance(inner, UpstreamBody):
        return inner
    return cast("AsyncGenerator[bytes, None]", aiter(stream))


def _let_go_of_request(response: httpx2.Response) -> None:
    """Once its body is read, an answer no longer needs the request that asked for it:
    retries, redirects, cookies and status checks are behind it, and the SDKs rebuild a
    request from its options for any retry. Yet the response keeps it, with its headers
    (the SDKs send about twenty, ~3.5 KB as httpx keeps them) and its body (the whole
    conversation as JSON), for as long as a stream is open (`python -m bench.memory`).
    What stays is the request's method, URL and extensions (errors name them)."""
    request = response._request  # None for a response made without one
    if request is not None:
        request.headers = httpx2.Headers()
        request.stream = httpx2.ByteStream(b"")
        request._content = b""


async def events(
    response: httpx2.Response, *, end: bytes | None = None
) -> AsyncGenerator[SSEvent, None]:
    """The events of `response`'s body, in order, as they arrive.

    `end` is a data value that ends the stream (OpenAI's `[DONE]`): it is not yielded,
    and the body after it is drained (`drain`). Transport errors pass through for the
    provider to map, except while draining: the answer is complete by then.
    """
    decoder = SSEDecoder()
    async with aclosing(body(response)) as chunks:
        async for chunk in chunks:
            for event in decoder.feed(chunk):
                if end is not None and event.data.startswith(end):
                    await drain(response, chunks)
                    return
                yield event


async def drain(response: httpx2.Response, chunks: AsyncIterator[bytes]) -> None:
    """Read what follows the end marker for at most 100 ms, so that an HTTP/1.1
    connection can go back to the pool (it can only once its body has been read to the
    end; the marker usually comes with the body's last bytes, so this costs one read).
    HTTP/2 closes a single stream, so there is nothing to wait for."""
    if response.http_version != "HTTP/1.1":
        return
    # asyncio's timeout, not anyio's scope: this runs once per answer, and the body has
    # nearly always ended already (the scope cost more than the read).
    try:
        async with asyncio.timeout(_DRAIN_SECONDS):
            async for _ in chunks:
                pass
    except _DRAIN_ENDS:
        pass  # the connection will not be reused; nothing else is lost
