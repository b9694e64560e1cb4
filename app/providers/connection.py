"""The HTTP/1.1 connection under `UpstreamPool`: httpcore's, with two costs taken out.

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

Everything else (connect, TLS, timeouts, keep-alive, h11's checks, the errors raised) is
httpcore's own. HTTP/1.1 only, as the pool asks for (`http2=False`): one request at a time
per connection, which the pool guarantees.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator

import h11
import httpcore2


class UpstreamConnection(httpcore2.AsyncHTTPConnection):
    """`AsyncHTTPConnection` (connect, TLS) whose HTTP/1.1 exchange is `_OneWriteHTTP11`."""

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
                    self._connection = _OneWriteHTTP11(
                        origin=self._origin, stream=stream, keepalive_expiry=self._keepalive_expiry
                    )
        return await self._connection.handle_async_request(request)


class _OneWriteHTTP11(httpcore2.AsyncHTTP11Connection):
    def __init__(
        self,
        origin: httpcore2.Origin,
        stream: httpcore2.AsyncNetworkStream,
        keepalive_expiry: float | None = None,
    ) -> None:
        super().__init__(origin=origin, stream=stream, keepalive_expiry=keepalive_expiry)
        self._held = b""

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

    async def _receive_response_body(self, request: httpcore2.Request) -> AsyncGenerator[bytes]:
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
