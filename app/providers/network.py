"""The upstream connections' sockets: an asyncio protocol, not anyio's socket stream.

Why: an open stream holds its upstream connection's socket for as long as the answer
lasts, parked in a read. Through httpcore's anyio backend that socket is an anyio
`SocketStream` (two resource guards, a protocol with two `asyncio.Event`s and a read
queue: a 528-byte deque block each) and every read waits inside `anyio.fail_after` (a
cancel scope with its two sets, the task's anyio state and weak references) and an
exception-mapping generator: about 7 KB an open stream in `bench.memory --probe`'s
tracemalloc diff, a tenth of what one held in all. Here a parked read holds one future and
one timer; the rest is a protocol with slots.

What it does is anyio's `SocketStream` as httpcore's backend used it: a read waits for
data with the read timeout (`httpcore2.ReadTimeout`), returns b"" at the peer's end of
stream, and raises `ReadError` when the connection broke; reading is paused while no read
waits and nothing is buffered past 64 KB, so a slow reader holds back the upstream; a write
waits for the transport to drain under the write timeout; TLS is started on the same
protocol (`loop.start_tls`); connects map their failures as httpcore's backend does
(`ConnectTimeout`, `ConnectError`) and apply the pool's socket options (TCP keep-alive).
`is_readable` (the pool's probe of an idle connection) asks the socket, as httpcore does.

The service runs on asyncio only (uvloop or the standard loop).
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Iterable
from typing import Any, cast

import httpcore2
from httpcore2._utils import is_socket_readable

from app.domain import deadlines
from app.domain.deadlines import Deadline

_HIGH_WATER = 64 * 1024  # bytes read ahead of the reader before reading pauses


class _Protocol(asyncio.Protocol):
    """Buffers what arrives for the one reader of the connection."""

    __slots__ = (
        "_buffer",
        "_drained",
        "_eof",
        "_error",
        "_full",
        "_paused",
        "_waiter",
        "transport",
    )

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self._buffer: list[bytes] = []
        self._waiter: asyncio.Future[None] | None = None  # a read parked for data
        self._drained: asyncio.Future[None] | None = None  # a write parked for the drain
        self._full = False  # the transport's write buffer is over its high-water mark
        self._error: BaseException | None = None
        self._eof = False
        self._paused = False  # reading paused (flow control)

    # -- asyncio callbacks --------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not subclasses of asyncio's, only alike.
        self.transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        self._buffer.append(data)
        if self._waiter is None and not self._paused and self._buffered() > _HIGH_WATER:
            self._paused = True  # nobody reads: hold the upstream back
            if self.transport is not None:
                self.transport.pause_reading()
        self._wake()

    def _buffered(self) -> int:
        return sum(len(b) for b in self._buffer)

    def eof_received(self) -> bool | None:
        self._eof = True
        self._wake()
        return None  # the transport closes itself

    def connection_lost(self, exc: Exception | None) -> None:
        self._eof = True
        if exc is not None:
            self._error = exc
        self._wake()
        self.resume_writing()

    def pause_writing(self) -> None:
        self._full = True

    def resume_writing(self) -> None:
        self._full = False
        _resolve(self._drained)

    def _wake(self) -> None:
        _resolve(self._waiter)

    # -- what the stream asks -----------------------------------------------------------

    def take(self, max_bytes: int) -> bytes:
        data = self._buffer.pop(0) if len(self._buffer) == 1 else b"".join(self._buffer)
        self._buffer.clear()
        if len(data) > max_bytes:
            data, rest = data[:max_bytes], data[max_bytes:]
            self._buffer.append(rest)
        return data

    def arm(self, timeout: float | None) -> tuple[asyncio.Future[None], Deadline | None]:
        """A future the next data (or end, or error) resolves, failing with TimeoutError
        after `timeout`, and its timer: the reader awaits it itself and then calls
        `disarm`, so a parked read holds no coroutine of the protocol's."""
        transport = self.transport
        if self._paused and transport is not None:
            self._paused = False
            transport.resume_reading()
        loop = asyncio.get_running_loop()
        waiter = self._waiter = loop.create_future()
        timer = None if timeout is None else deadlines.call_later(timeout, _expire, waiter)
        return waiter, timer

    def disarm(self, timer: Deadline | None) -> None:
        self._waiter = None
        if timer is not None:
            timer.cancel()

    async def wait_for_drain(self, timeout: float | None) -> None:  # noqa: ASYNC109
        if not self._full or self._eof:
            return
        loop = asyncio.get_running_loop()
        drained = self._drained = loop.create_future()
        timer = None if timeout is None else deadlines.call_later(timeout, _expire, drained)
        try:
            await drained
        finally:
            self._drained = None
            if timer is not None:
                timer.cancel()


def _resolve(future: asyncio.Future[None] | None) -> None:
    if future is not None and not future.done():
        future.set_result(None)


def _expire(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_exception(TimeoutError())


class LeanStream(httpcore2.AsyncNetworkStream):
    """One upstream socket, as httpcore's network stream."""

    __slots__ = ("_closed", "_protocol", "_transport")

    def __init__(self, transport: asyncio.Transport, protocol: _Protocol) -> None:
        self._transport = transport
        self._protocol = protocol
        self._closed = False

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:  # noqa: ASYNC109
        protocol = self._protocol
        if not protocol._buffer:
            if self._closed:
                raise httpcore2.ReadError("the connection was closed")
            if not protocol._eof:
                waiter, timer = protocol.arm(timeout)
                try:
                    await waiter
                except TimeoutError:
                    raise httpcore2.ReadTimeout("timed out reading from the upstream") from None
                finally:
                    protocol.disarm(timer)
        if protocol._buffer:
            return protocol.take(max_bytes)
        if self._closed:
            raise httpcore2.ReadError("the connection was closed")
        if protocol._error is not None:
            raise httpcore2.ReadError(str(protocol._error)) from protocol._error
        return b""  # the peer's end of stream

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:  # noqa: ASYNC109
        if not buffer:
            return
        protocol = self._protocol
        if self._closed or self._transport.is_closing():
            error = protocol._error
            raise httpcore2.WriteError(str(error) if error else "the connection is closed")
        try:
            self._transport.write(buffer)
            await protocol.wait_for_drain(timeout)
        except TimeoutError:
            raise httpcore2.WriteTimeout("timed out writing to the upstream") from None
        except OSError as exc:
            raise httpcore2.WriteError(str(exc)) from exc
        if protocol._error is not None:
            raise httpcore2.WriteError(str(protocol._error)) from protocol._error

    async def aclose(self) -> None:
        self._closed = True
        self._transport.close()

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,  # noqa: ASYNC109
    ) -> httpcore2.AsyncNetworkStream:
        loop = asyncio.get_running_loop()
        try:
            async with deadlines.timeout(timeout):
                transport = await loop.start_tls(
                    self._transport,
                    self._protocol,
                    ssl_context,
                    server_hostname=server_hostname,
                )
        except BaseException as exc:
            self._transport.close()
            if isinstance(exc, TimeoutError):
                raise httpcore2.ConnectTimeout("timed out in the TLS handshake") from exc
            if isinstance(exc, ssl.SSLError | OSError):
                raise httpcore2.ConnectError(str(exc)) from exc
            raise
        if transport is None:  # the connection closed during the handshake
            raise httpcore2.ConnectError("the connection closed during the TLS handshake")
        self._protocol.transport = transport
        return LeanStream(transport, self._protocol)

    def get_extra_info(self, info: str) -> Any:
        transport = self._transport
        if info == "ssl_object":
            return transport.get_extra_info("ssl_object")
        if info == "client_addr":
            return transport.get_extra_info("sockname")
        if info == "server_addr":
            return transport.get_extra_info("peername")
        if info == "socket":
            return transport.get_extra_info("socket")
        if info == "is_readable":
            protocol = self._protocol
            if protocol._buffer or protocol._eof or self._closed or transport.is_closing():
                return True
            return is_socket_readable(transport.get_extra_info("socket"))
        return None


class LeanBackend(httpcore2.AsyncNetworkBackend):
    """httpcore's network backend over `LeanStream`."""

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109
        local_address: str | None = None,
        socket_options: Iterable[httpcore2.SOCKET_OPTION] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        loop = asyncio.get_running_loop()
        local = None if local_address is None else (local_address, 0)
        try:
            async with deadlines.timeout(timeout):
                transport, protocol = await loop.create_connection(
                    _Protocol, host, port, local_addr=local
                )
        except TimeoutError as exc:
            raise httpcore2.ConnectTimeout(f"timed out connecting to {host}:{port}") from exc
        except OSError as exc:
            raise httpcore2.ConnectError(str(exc)) from exc
        return _with_options(transport, protocol, socket_options)

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,  # noqa: ASYNC109
        socket_options: Iterable[httpcore2.SOCKET_OPTION] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        loop = asyncio.get_running_loop()
        try:
            async with deadlines.timeout(timeout):
                transport, protocol = await loop.create_unix_connection(_Protocol, path)
        except TimeoutError as exc:
            raise httpcore2.ConnectTimeout(f"timed out connecting to {path}") from exc
        except OSError as exc:
            raise httpcore2.ConnectError(str(exc)) from exc
        return _with_options(transport, protocol, socket_options)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


def _with_options(
    transport: asyncio.BaseTransport,
    protocol: _Protocol,
    socket_options: Iterable[httpcore2.SOCKET_OPTION] | None,
) -> LeanStream:
    try:
        sock = transport.get_extra_info("socket")
        for option in socket_options or ():
            sock.setsockopt(*option)
    except OSError as exc:
        transport.close()
        raise httpcore2.ConnectError(str(exc)) from exc
    return LeanStream(cast(asyncio.Transport, transport), protocol)
