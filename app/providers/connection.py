"""The HTTP/1.1 connection under `UpstreamPool`: httpcore's, with three costs taken out.

- The request goes out in one socket write. httpcore writes the headers, then the body:
  two sends through anyio (each a system call with the kernel's loopback delivery, a
  cancel scope and a loop yield), 8% of a non-streaming request's CPU between them
  (`bench.profile nonstream`). Here the headers wait for the body's first bytes, or for
  the end of a request without a body, and leave with them.
- A response body is handed up one network read at a time. httpcore yields each HTTP
  chunk alone, and a model API sends one chunk per SSE event: every token paid for four
  async generators (httpcore's two, the transport's, httpx's) and an exception-mapping
  context manager, a sixth of a stream's CPU (`bench.profile chat`). Here the chunks h11
  has already buffered are joined and yielded as one piece; the bytes are the same.
- A chunked body (every streamed answer) is decoded by `app.providers.chunked`, not by
  h11, which made an event of each chunk (5.8 us a token, a sixth of a stream's CPU
  again): h11 reads the response's head, the body is read from the network here, and
  the connection goes back to the pool as h11 would have let it (a whole body, nothing
  past it, no `Connection: close` either way, not HTTP/1.0); otherwise it is closed.

- The request's header lines are checked by h11 once per distinct line, not on every
  request (`HeaderChecks`): an SDK sends the same ~17 lines each time, and h11's name and
  value patterns over all of them took 49 us before each request went out.

Everything else (connect, TLS, timeouts, keep-alive, the head's checks, the errors
raised) is httpcore's own. HTTP/1.1 only, as the pool asks for (`http2=False`): one
request at a time per connection, which the pool guarantees.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator
from typing import Any

import h11
import httpcore2
from h11._headers import CONTENT_LENGTH_MAX_DIGITS, Headers, normalize_and_validate
from httpcore2._async.http11 import HTTPConnectionState

from app.providers.chunked import ChunkedDecoder, ProtocolError

# Header lines whose rules span lines (duplicates, conflicts): checked with each request.
_ACROSS_LINES = (b"content-length", b"transfer-encoding")


class HeaderChecks:
    """h11's checks of request header lines, each distinct line checked once.

    A line h11 has accepted is kept with its normalized form (up to `limit` lines, then
    the memory starts again), and a request whose lines are all known gets them without
    h11's patterns. Content-Length and Transfer-Encoding go through h11 with every request
    (its rules for them span lines: with more than one such line, all the lines do), and
    so does a request with any line not seen before: it is refused exactly as h11 would.
    One per pool: its connections send the same lines."""

    def __init__(self, limit: int = 256) -> None:
        self._known: dict[tuple[bytes, bytes], tuple[bytes, bytes, bytes]] = {}
        self._limit = limit

    def normalize(self, headers: list[tuple[bytes, bytes]]) -> Headers:
        known = self._known
        lines: list[tuple[bytes, bytes, bytes]] = []
        across = False
        for pair in headers:
            line = known.get(pair)
            if line is None and not across and (name := pair[0].lower()) in _ACROSS_LINES:
                across = True  # the only one: checked alone, no other line to conflict with
                line = _alone(name, pair)
            if line is None:
                return self._learn(headers)
            lines.append(line)
        return Headers(lines)

    def _learn(self, headers: list[tuple[bytes, bytes]]) -> Headers:
        checked = normalize_and_validate(headers)
        full = checked._full_items
        if len(full) == len(headers):  # no line merged away: the pairs line up
            if len(self._known) + len(full) > self._limit:
                self._known.clear()
            for pair, line in zip(headers, full, strict=True):
                if line[1] not in _ACROSS_LINES:
                    self._known[pair] = line
        return checked


def _alone(name: bytes, pair: tuple[bytes, bytes]) -> tuple[bytes, bytes, bytes]:
    """A Content-Length or Transfer-Encoding line as h11 normalizes it on its own; the
    common one, a plain length, without its patterns (h11 gives the same line for it)."""
    value = pair[1]
    if name == b"content-length" and value.isdigit() and len(value) <= CONTENT_LENGTH_MAX_DIGITS:
        return (pair[0], name, value)
    line: tuple[bytes, bytes, bytes] = normalize_and_validate([pair])._full_items[0]
    return line


class UpstreamConnection(httpcore2.AsyncHTTPConnection):
    """`AsyncHTTPConnection` (connect, TLS) whose HTTP/1.1 exchange is `_UpstreamHTTP11`."""

    def __init__(self, *args: Any, header_checks: HeaderChecks | None = None, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._request_lock = asyncio.Lock()  # type: ignore[assignment]  # see _UpstreamHTTP11
        self._header_checks = header_checks or HeaderChecks()

    async def handle_async_request(self, request: httpcore2.Request) -> httpcore2.Response:
        if not self.can_handle_request(request.url.origin):
            raise RuntimeError(f"request to {request.url.origin} on a connection to {self._origin}")
        if self._connection is None:
            async with self._request_lock:
                if self._connection is None:
                    try:
                        stream = await self._connect(request)
                    except BaseException:
                        self._connect_failed = True
                        raise
                    self._connection = _UpstreamHTTP11(
                        origin=self._origin,
                        stream=stream,
                        keepalive_expiry=self._keepalive_expiry,
                        header_checks=self._header_checks,
                    )
        return await self._connection.handle_async_request(request)

    def chunked_exchange(self) -> _UpstreamHTTP11 | None:
        """The exchange whose chunked body is read straight from it (`next_piece`)."""
        exchange = self._connection
        if isinstance(exchange, _UpstreamHTTP11) and exchange.chunked_body():
            return exchange
        return None


class _UpstreamHTTP11(httpcore2.AsyncHTTP11Connection):
    def __init__(
        self,
        origin: httpcore2.Origin,
        stream: httpcore2.AsyncNetworkStream,
        keepalive_expiry: float | None = None,
        header_checks: HeaderChecks | None = None,
    ) -> None:
        super().__init__(origin=origin, stream=stream, keepalive_expiry=keepalive_expiry)
        self._header_checks = header_checks or HeaderChecks()
        # httpcore's lock is anyio's, which makes its 528-byte waiter deque up front, on
        # each connection, for as long as the stream is open; asyncio's only when a second
        # task waits, which the pool never lets happen (one request at a time).
        self._state_lock = asyncio.Lock()  # type: ignore[assignment]  # same use
        self._held = b""
        # This response's chunked body, read here rather than through h11.
        self._chunked: ChunkedDecoder | None = None
        self._chunked_start = b""  # the body's first bytes, read with the head
        self._reusable = False  # h11 would keep the connection after this response
        self._read_timeout: float | None = None  # this response's, for `next_piece`

    async def _receive_response_headers(
        self, request: httpcore2.Request
    ) -> tuple[bytes, int, bytes, list[tuple[bytes, bytes]], bytes]:
        head = await super()._receive_response_headers(request)
        version, status, _, headers, _ = head
        self._chunked = None
        if status >= 200 and status not in (204, 304) and request.method != b"HEAD":
            names = {name.lower(): value for name, value in headers}
            if names.get(b"transfer-encoding", b"").strip().lower() == b"chunked":
                # What h11 has read past the head is the body's start.
                self._chunked = ChunkedDecoder(self.MAX_INCOMPLETE_EVENT_SIZE)
                self._chunked_start = self._h11_state.trailing_data[0]
                self._read_timeout = request.extensions.get("timeout", {}).get("read")
                # What h11 would decide at the body's end, decided now: keep-alive both
                # ways, and the whole request sent. Its state (~1 KB) is then let go for
                # as long as the body lasts; a reused connection starts a fresh one.
                self._reusable = (
                    version == b"HTTP/1.1"
                    and not _says_close(headers)
                    and self._h11_state.our_state is h11.DONE
                )
                self._h11_state = None  # type: ignore[assignment]  # until `_response_closed`
        return head

    async def _send_request_headers(self, request: httpcore2.Request) -> None:
        timeout = request.extensions.get("timeout", {}).get("write")
        try:
            event = h11.Request(
                method=request.method,
                target=request.url.target,
                headers=self._header_checks.normalize(request.headers),
            )
        except h11.LocalProtocolError as exc:  # httpcore's mapping
            raise httpcore2.LocalProtocolError(exc) from exc
        await self._send_event(event, timeout=timeout)

    # httpcore's signature, timeout parameter included.
    async def _send_event(self, event: h11.Event, timeout: float | None = None) -> None:  # noqa: ASYNC109
        data = self._h11_state.send(event) or b""
        if isinstance(event, h11.Request):
            self._held = data  # the headers leave with what follows them
            return
        if self._held:
            data, self._held = self._held + data, b""
        if data:
            await self._network_stream.write(data, timeout=timeout)

    def chunked_body(self) -> bool:
        """Whether this response's body is chunked and read here (`next_piece`)."""
        return self._chunked is not None

    async def next_piece(self) -> bytes:
        """The chunked body's next decoded piece (all the data one network read brought),
        b"" once the body has ended: one coroutine a read, where a generator per layer
        would stay parked beside the stream for as long as it is open."""
        decoder = self._chunked
        if decoder is None:
            return b""  # the response was closed
        data, self._chunked_start = self._chunked_start, b""
        try:
            while not decoder.done:
                if data:
                    piece = decoder.feed(data)
                    if piece:
                        return piece
                    if decoder.done:
                        break
                data = await self._network_stream.read(self.READ_NUM_BYTES, self._read_timeout)
                if not data:
                    decoder.eof()
        except ProtocolError as exc:
            raise httpcore2.RemoteProtocolError(str(exc)) from exc
        return b""

    async def _receive_response_body(self, request: httpcore2.Request) -> AsyncGenerator[bytes]:
        if self._chunked is not None:
            while piece := await self.next_piece():
                yield piece
            return
        timeout = request.extensions.get("timeout", {}).get("read")
        h11_state = self._h11_state
        while True:
            # Reads the network when h11 has nothing buffered.
            event: h11.Event | type[h11.NEED_DATA | h11.PAUSED] = await self._receive_event(
                timeout=timeout
            )
            if isinstance(event, h11.Data):
                pieces = [event.data]
                while True:  # the chunks the same read brought
                    try:
                        after = h11_state.next_event()
                    except h11.RemoteProtocolError as exc:
                        raise httpcore2.RemoteProtocolError(exc) from exc
                    if not isinstance(after, h11.Data):
                        break
                    pieces.append(after.data)
                yield b"".join(pieces) if len(pieces) > 1 else bytes(pieces[0])
                event = after
            if isinstance(event, h11.EndOfMessage) or event is h11.PAUSED:
                return

    async def _response_closed(self) -> None:
        decoder, self._chunked = self._chunked, None
        if decoder is None:
            await super()._response_closed()
            return
        # h11 never saw this body: what it would decide, decided here. Reused only after
        # a whole body with nothing past it, a whole request, and keep-alive both ways.
        async with self._state_lock:
            if decoder.done and not decoder.extra and self._reusable:
                self._h11_state = self._fresh_h11()
                self._state = HTTPConnectionState.IDLE
                if self._keepalive_expiry is not None:
                    self._expire_at = time.monotonic() + self._keepalive_expiry
            else:
                await self.aclose()

    def _fresh_h11(self) -> h11.Connection:
        return h11.Connection(
            our_role=h11.CLIENT, max_incomplete_event_size=self.MAX_INCOMPLETE_EVENT_SIZE
        )


def _says_close(headers: list[tuple[bytes, bytes]]) -> bool:
    """A `Connection: close` among the headers (h11's test, on the raw pairs)."""
    return any(
        name.lower() == b"connection"
        and b"close" in (token.strip().lower() for token in value.split(b","))
        for name, value in headers
    )
