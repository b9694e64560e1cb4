"""The HTTP transport under the providers' SDK clients: a connection pool that costs O(1).

Why not httpx's own pool (httpcore's `AsyncConnectionPool`): on every request start and
every response close it walks all of its connections, and asks each idle one whether the
server closed it (a `poll` through anyio's socket attributes). At concurrency 50 that was
13% of a non-streaming request's CPU (`bench.profile nonstream`); with thousands of open
streams every new request paid for all of them, and one worker opened only ~45 upstream
connections a second past 3,000 (`bench.memory --counts 5000`: 1,000 of 5,000 streamed).

This pool keeps a stack of idle connections per origin and a count of open ones: a request
takes the most recently used idle connection (probing only that one), else opens a new one
while under `max_connections`, else waits (the request's pool timeout) for one to come
back. A response hands its connection back when it is closed: idle again if its exchange
finished, dropped otherwise. Each connection is httpcore's own (`AsyncHTTPConnection`:
connect, TLS, h11), so the wire is what the SDKs' default client speaks: HTTP/1.1, the
same timeouts, TCP keep-alive probes (the Anthropic SDK's socket options) on every socket.

Their sockets are `app.providers.network`'s asyncio protocol, not anyio's socket stream
(less held by a stream parked in a read).
The response body (`UpstreamBody`: exception mapping and the hand-back) is read straight
from the connection's exchange when it is chunked, one coroutine per network read, with no
generator of httpx's or httpcore's parked beside an open stream; the connection itself
(`app.providers.connection`) writes a request in one send and hands up a body one network
read at a time.
Proxies are not handled here: `upstream_http_client` falls back to the SDK's default client
when the environment names one.
"""

from __future__ import annotations

import socket
import ssl
from collections import deque
from collections.abc import AsyncIterable, AsyncIterator, Iterator
from contextlib import contextmanager, suppress
from typing import Any

import anyio
import httpcore2
import httpx2

from app.domain import deadlines
from app.providers.connection import HeaderChecks, UpstreamConnection
from app.providers.network import LeanBackend

# httpcore's exceptions as httpx's, most specific first (what httpx's transport does).
_EXCEPTIONS: tuple[tuple[type[Exception], type[httpx2.HTTPError]], ...] = (
    (httpcore2.ConnectTimeout, httpx2.ConnectTimeout),
    (httpcore2.ReadTimeout, httpx2.ReadTimeout),
    (httpcore2.WriteTimeout, httpx2.WriteTimeout),
    (httpcore2.PoolTimeout, httpx2.PoolTimeout),
    (httpcore2.TimeoutException, httpx2.TimeoutException),
    (httpcore2.ConnectError, httpx2.ConnectError),
    (httpcore2.ReadError, httpx2.ReadError),
    (httpcore2.WriteError, httpx2.WriteError),
    (httpcore2.NetworkError, httpx2.NetworkError),
    (httpcore2.ProxyError, httpx2.ProxyError),
    (httpcore2.UnsupportedProtocol, httpx2.UnsupportedProtocol),
    (httpcore2.LocalProtocolError, httpx2.LocalProtocolError),
    (httpcore2.RemoteProtocolError, httpx2.RemoteProtocolError),
    (httpcore2.ProtocolError, httpx2.ProtocolError),
)


_Key = tuple[bytes, bytes, int]
_SENT: tuple[bytes, ...] = ()  # a request's body once it has gone


def _key(origin: httpcore2.Origin) -> _Key:
    """httpcore's `Origin` compares by value but is not hashable."""
    return (origin.scheme, origin.host, origin.port)


def _as_httpx(exc: BaseException) -> httpx2.HTTPError | None:
    """httpcore's error as httpx's; None for anything else (passed on as it is)."""
    if isinstance(exc, httpcore2.ConnectionNotAvailable):
        return None
    for theirs, ours in _EXCEPTIONS:
        if isinstance(exc, theirs):
            return ours(str(exc))
    return None


@contextmanager
def _mapped() -> Iterator[None]:
    try:
        yield
    except Exception as exc:
        mapped = _as_httpx(exc)
        if mapped is None:
            raise
        try:
            raise mapped from exc
        finally:
            # The raised error's traceback holds this frame: a local naming the error
            # would make a reference cycle, and everything the failed request's frames
            # hold would wait for a full collection (rare while serving) to be freed.
            del mapped


def keepalive_socket_options() -> list[tuple[int, int, int]]:
    """TCP keep-alive after 60 s idle, every 60 s, 5 probes: a long silent stream (a model
    thinking) is not dropped by a NAT in between; the Anthropic SDK's own choice."""
    options = [(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)]
    for name, value in (("TCP_KEEPIDLE", 60), ("TCP_KEEPINTVL", 60), ("TCP_KEEPCNT", 5)):
        option = getattr(socket, name, None)
        if option is not None:
            options.append((socket.IPPROTO_TCP, option, value))
    return options


class UpstreamPool(httpx2.AsyncBaseTransport):
    """An httpx transport over a pool of HTTP/1.1 connections; every step O(1)."""

    def __init__(
        self,
        *,
        max_connections: int,
        max_keepalive_connections: int,
        keepalive_expiry: float | None = 5.0,
        network_backend: httpcore2.AsyncNetworkBackend | None = None,
    ) -> None:
        self._max_connections = max_connections
        self._max_idle = max_keepalive_connections
        self._keepalive_expiry = keepalive_expiry
        self._ssl_context: ssl.SSLContext | None = None  # made for the first https origin
        self._socket_options = keepalive_socket_options()
        # Sockets without anyio's per-stream events and per-read scopes (`network`).
        self._network_backend = network_backend or LeanBackend()
        self._idle: dict[_Key, list[httpcore2.AsyncHTTPConnection]] = {}
        self._idle_count = 0
        self._open = 0  # connections open or opening, idle ones included
        self._waiting: deque[anyio.Event] = deque()
        self._closed = False
        self._header_checks = HeaderChecks()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        assert isinstance(request.stream, AsyncIterable)
        url = request.url
        req = httpcore2.Request(
            method=request.method,
            url=httpcore2.URL(
                scheme=url.raw_scheme, host=url.raw_host, port=url.port, target=url.raw_path
            ),
            content=request.stream,
            extensions=request.extensions,
        )
        # httpx's header pairs are bytes already: httpcore's check of each name and value
        # (two calls a header, ~17 headers) would find nothing, on the way to the first token.
        req.headers = request.headers.raw
        timeout = request.extensions.get("timeout", {}).get("pool")
        origin = req.url.origin
        while True:
            # The pool timeout only when the request may wait for a connection.
            connection = self._ready(origin)
            if connection is None:
                try:
                    # asyncio's timeout (on the shared deadline heap): an anyio scope would
                    # leave its state on the run's task for as long as the stream is open.
                    async with deadlines.timeout(timeout):
                        connection = await self._acquire(origin)
                except TimeoutError:
                    raise httpx2.PoolTimeout("no upstream connection became free in time") from None
            try:
                with _mapped():
                    response = await connection.handle_async_request(req)
            except httpcore2.ConnectionNotAvailable:
                await self.release(connection, origin)  # closed under us: take another
                continue
            except BaseException:
                with anyio.CancelScope(shield=True):
                    await self.release(connection, origin)
                raise
            break
        # The head has come back: what was sent is not needed again (a stream holds its
        # request for as long as it is open; `_sse.body` lets go of the SDK's side).
        req.headers = []
        req.stream = _SENT
        return httpx2.Response(
            status_code=response.status,
            headers=response.headers,
            stream=UpstreamBody(self, connection, origin, response.stream),
            extensions=response.extensions,
        )

    def _ready(self, origin: httpcore2.Origin) -> httpcore2.AsyncHTTPConnection | None:
        """The most recently used idle connection, when it can be taken without waiting
        (neither expired nor closed by the server); else None and `_acquire` decides."""
        stack = self._idle.get(_key(origin))
        if self._closed or not stack:
            return None
        connection = stack[-1]
        if connection.has_expired() or not connection.is_available():
            return None  # closed by `_take_idle`
        stack.pop()
        self._idle_count -= 1
        return connection

    async def _acquire(self, origin: httpcore2.Origin) -> httpcore2.AsyncHTTPConnection:
        while True:
            if self._closed:
                raise httpx2.PoolTimeout("the upstream connection pool is closed")
            connection = await self._take_idle(origin)
            if connection is not None:
                return connection
            if self._open < self._max_connections:
                self._open += 1
                return UpstreamConnection(
                    origin=origin,
                    ssl_context=self._tls() if origin.scheme == b"https" else None,
                    keepalive_expiry=self._keepalive_expiry,
                    socket_options=self._socket_options,
                    network_backend=self._network_backend,
                    header_checks=self._header_checks,
                )
            if self._idle_count and await self._close_one_idle():
                continue  # full of idle connections to other origins: one made room
            await self._wait()

    def _tls(self) -> ssl.SSLContext:
        # On the first https connection, not at start-up: loading the CA bundle is about
        # 1.4 MB of a worker, and a plain-http upstream (a local model server) never needs it.
        if self._ssl_context is None:
            self._ssl_context = httpx2.create_ssl_context()
        return self._ssl_context

    async def _take_idle(self, origin: httpcore2.Origin) -> httpcore2.AsyncHTTPConnection | None:
        stack = self._idle.get(_key(origin))
        while stack:
            connection = stack.pop()
            self._idle_count -= 1
            # One probe, of the connection about to be used: expired, or closed by the server.
            if not connection.has_expired() and connection.is_available():
                return connection
            self._open -= 1
            await _close(connection)
        return None

    async def _close_one_idle(self) -> bool:
        for stack in self._idle.values():
            if stack:
                self._idle_count -= 1
                self._open -= 1
                await _close(stack.pop(0))
                return True
        return False

    async def _wait(self) -> None:
        """Until a connection is handed back (or closed): the caller then tries again."""
        event = anyio.Event()
        self._waiting.append(event)
        try:
            await event.wait()
        except BaseException:
            if event.is_set():
                self._wake()  # woken and timed out at once: the turn goes to the next
            else:
                self._waiting.remove(event)
            raise

    async def release(
        self, connection: httpcore2.AsyncHTTPConnection, origin: httpcore2.Origin
    ) -> None:
        """A connection whose exchange is over: kept for reuse when it can be, else dropped."""
        keep = not self._closed and connection.is_idle() and not connection.is_closed()
        if keep and self._idle_count < self._max_idle:
            self._idle.setdefault(_key(origin), []).append(connection)
            self._idle_count += 1
        else:
            self._open -= 1
            if keep:  # more idle connections than `max_keepalive_connections`
                await _close(connection)
        self._wake()

    def _wake(self) -> None:
        if self._waiting:
            self._waiting.popleft().set()

    async def aclose(self) -> None:
        self._closed = True
        idle = [c for stack in self._idle.values() for c in stack]
        self._idle.clear()
        self._open -= len(idle)
        self._idle_count = 0
        for connection in idle:
            await _close(connection)
        while self._waiting:
            self._waiting.popleft().set()


class UpstreamBody(httpx2.AsyncByteStream):
    """A response body read from its connection; closing it returns the connection.

    Its own async iterator, not a generator: a chunked body (every streamed answer) is
    read straight from the connection's exchange (`next_piece`), one coroutine per read,
    where httpx's bound stream, this body, httpcore's byte stream (with its trace and
    iteration guard) and the exchange's two readers each kept a generator parked beside
    an open stream. Errors are mapped and a failed read closes the response, as httpcore's
    byte stream did. Any other body goes through httpcore's stream.
    """

    __slots__ = ("_closed", "_connection", "_exchange", "_iterator", "_origin", "_pool", "_stream")

    def __init__(
        self,
        pool: UpstreamPool,
        connection: httpcore2.AsyncHTTPConnection,
        origin: httpcore2.Origin,
        stream: Any,
    ) -> None:
        self._pool = pool
        self._connection = connection
        self._origin = origin
        self._stream = stream
        self._closed = False
        self._exchange = (
            connection.chunked_exchange() if isinstance(connection, UpstreamConnection) else None
        )
        self._iterator: AsyncIterator[bytes] | None = None

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self

    async def __anext__(self) -> bytes:
        try:
            if self._exchange is None:
                if self._iterator is None:
                    self._iterator = aiter(self._stream)
                return await anext(self._iterator)
            piece = await self._exchange.next_piece()
        except StopAsyncIteration:
            raise
        except BaseException as exc:
            if self._exchange is not None:
                await self.aclose()  # what httpcore's byte stream did on a failed read
            mapped = _as_httpx(exc)
            if mapped is None:
                raise
            try:
                raise mapped from exc
            finally:
                del mapped  # no reference cycle through this frame (see `_mapped`)
        if not piece:
            raise StopAsyncIteration
        return piece

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._exchange = self._iterator = None
        with anyio.CancelScope(shield=True):
            try:
                with _mapped():
                    await self._stream.aclose()  # idle if the exchange finished, else closed
            finally:
                await self._pool.release(self._connection, self._origin)


async def _close(connection: httpcore2.AsyncHTTPConnection) -> None:
    # A socket that fails to close is gone either way.
    with anyio.CancelScope(shield=True), suppress(OSError, anyio.BrokenResourceError):
        await connection.aclose()
