"""uvicorn's httptools protocol with its waiting state made on first use.

Why: every client connection holds uvicorn's protocol for as long as it is open, and that
protocol makes three `collections.deque`s up front: its pipeline of queued requests and
the waiters of two `asyncio.Event`s (the request cycle's message event, the flow
control's writable event). An empty deque is a 528-byte block plus the object, ~0.75 KB
each, ~2.3 KB of an open stream (`python -m bench.memory --probe DIR`), though a stream's
connection never pipelines and at most one task waits on each event. Here the pipeline is
a list and the events keep their waiters in a list made when a task first waits.

What a client sees is unchanged: the same parser, the same request cycle, the same events
set and waited on at the same points, with one addition: a connection whose client takes
nothing of what is written to it for `STREAM_SEND_TIMEOUT_SECONDS` is cut
(`WRITE_STALL_SECONDS`, from the app's lifespan state). The clock runs from the transport
pausing writes (64 KiB waiting) to its resuming them (16 KiB left), so a client that reads
but takes less than 48 KiB in that time is cut too: slower than about 0.8 KiB/s. Without
it, a client that stopped reading (its TCP window full) kept its connection for ever: the
stream's send timed out and its task ended, but closing a transport waits until its buffer
is written, so the connection, its protocol and the ~64 KiB the transport buffered stayed
for as long as the client held its socket open. Cut, the stream sees its client gone (and
a resumable reader can come back with `Last-Event-ID`); a non-streaming answer to a client
that reads nothing is bounded the same way.

And a request's head is due `REQUEST_HEADERS_TIMEOUT_SECONDS` after the connection opens
(or after the request's first byte, on a kept-alive connection; `HEADERS_SECONDS`, from
the lifespan state). uvicorn has no such limit: a client that opened connections and sent
nothing, or sent its headers a byte at a time, held each connection for ever (a
slowloris: enough of them and the process runs out of file descriptors). A connection
that sent nothing is closed (as an idle kept-alive one is); one whose head was under way
gets `408 request_timeout` first, in the same JSON error body as every other refusal
(`{"error": {"code", "message", ...}}`, with OpenAI's `type` and `param` too, since the
path that would say which surface it is may not have arrived). The server runs it with
`--http app.api.http_protocol:LeanHttpToolsProtocol` (the Dockerfile, `dev.py serve`, the
benchmarks); uvicorn's own `--http httptools` serves the same.
"""

from __future__ import annotations

import asyncio
import json
import weakref
from typing import Any, Generic, TypeVar

from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol
from uvicorn.server import ServerState

from app.domain import deadlines

T = TypeVar("T")


class LeanEvent:
    """`asyncio.Event` as uvicorn uses it (`set`, `clear`, `is_set`, `wait`), its waiters
    in a list made when a task first waits instead of a deque made up front."""

    __slots__ = ("_value", "_waiters")

    def __init__(self) -> None:
        self._value = False
        self._waiters: list[asyncio.Future[bool]] | None = None

    def is_set(self) -> bool:
        return self._value

    def set(self) -> None:
        if not self._value:
            self._value = True
            for waiter in self._waiters or ():
                if not waiter.done():
                    waiter.set_result(True)

    def clear(self) -> None:
        self._value = False

    async def wait(self) -> bool:
        if self._value:
            return True
        waiters = self._waiters
        if waiters is None:
            waiters = self._waiters = []
        waiter = asyncio.get_running_loop().create_future()
        waiters.append(waiter)
        try:
            await waiter
            return True
        finally:
            waiters.remove(waiter)


class Pipeline(list[T], Generic[T]):
    """The queue of pipelined requests, as uvicorn uses its deque (`appendleft`, `pop`,
    truth): an empty list is 56 bytes, an empty deque ~0.75 KB. Pipelining is rare and
    short, so inserting at the front costs nothing that matters."""

    __slots__ = ()

    def appendleft(self, item: T) -> None:
        self.insert(0, item)


SERVER_TABLES = "server_tables"
# The lifespan state's entry for how long a connection may take nothing written to it.
WRITE_STALL_SECONDS = "write_stall_seconds"
# ... and for how long a request's head may take to arrive.
HEADERS_SECONDS = "headers_seconds"


class ServerTables:
    """uvicorn's sets of open connections and of request tasks, which keep the table of a
    burst's peak (`app.observability.memory.compact` rebuilds them).

    The app's lifespan puts one in its state under `SERVER_TABLES`; uvicorn hands that
    state to every protocol it makes, and `LeanHttpToolsProtocol` tells it which server it
    serves. Held weakly: the app may outlive its server (tests build many). Under another
    protocol it stays empty."""

    __slots__ = ("_server",)

    def __init__(self) -> None:
        self._server: weakref.ref[ServerState] | None = None

    def serve(self, server: ServerState) -> None:
        if self._server is None or self._server() is not server:
            self._server = weakref.ref(server)

    def __call__(self) -> list[set[Any]]:
        state = None if self._server is None else self._server()
        return [] if state is None else [state.connections, state.tasks]


class LeanHttpToolsProtocol(HttpToolsProtocol):
    # Armed while the transport's buffer is over its high-water mark; a class default, so
    # a connection that never stalls holds nothing for it.
    _stalled: deadlines.Deadline | None = None
    # Armed from a connection's opening, and from a request's first byte, to its headers;
    # `_head_begun` from that first byte to the headers.
    _head_due: deadlines.Deadline | None = None
    _head_begun = False

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.pipeline = Pipeline()  # type: ignore[assignment]  # the deque's uses only
        tables = self.app_state.get(SERVER_TABLES)
        if isinstance(tables, ServerTables):
            tables.serve(self.server_state)

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        writable = LeanEvent()
        writable.set()  # as FlowControl starts: writable
        self.flow._is_writable_event = writable  # type: ignore[assignment]
        self._await_head()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._head_begun = True
        if self._head_due is None:  # a kept-alive connection's next request
            self._await_head()

    def on_headers_complete(self) -> None:
        self._head_arrived()
        previous = self.cycle
        super().on_headers_complete()
        if self.cycle is not previous:  # a new request's cycle: its task has not run yet
            self.cycle.message_event = LeanEvent()  # type: ignore[assignment]

    def pause_writing(self) -> None:
        super().pause_writing()
        seconds = self.app_state.get(WRITE_STALL_SECONDS)
        if isinstance(seconds, int | float) and self._stalled is None:
            self._stalled = deadlines.call_later(seconds, self._cut)

    def resume_writing(self) -> None:
        super().resume_writing()
        self._unstall()

    def connection_lost(self, exc: Exception | None) -> None:
        self._unstall()
        self._head_arrived()
        super().connection_lost(exc)

    def _await_head(self) -> None:
        seconds = self.app_state.get(HEADERS_SECONDS)
        if isinstance(seconds, int | float):
            self._head_due = deadlines.call_later(seconds, self._head_late)

    def _head_arrived(self) -> None:
        self._head_begun = False
        if self._head_due is not None:
            self._head_due.cancel()
            self._head_due = None

    def _head_late(self) -> None:
        """The head did not arrive in time: a connection that sent nothing is closed, one
        whose request had begun is told 408 first."""
        self._head_due = None
        transport = self.transport
        if transport.is_closing():
            return
        if not self._head_begun:
            transport.close()
            return
        late = "The request's headers did not arrive in time."
        self._refuse(
            408,
            {
                "code": "request_timeout",
                "message": late,
                "type": "invalid_request_error",
                "param": None,
            },
        )

    def _unstall(self) -> None:
        if self._stalled is not None:
            self._stalled.cancel()
            self._stalled = None

    def _cut(self) -> None:
        """The client took nothing for the whole stall: let the connection go, with
        what was buffered for it (a close would wait for the client to read it)."""
        self._stalled = None
        self.transport.abort()

    def send_400_response(self, msg: str) -> None:
        """uvicorn's answer to a request its parser refused, with our JSON error body."""
        self._refuse(400, {"code": "invalid_request", "message": msg})

    def _refuse(self, status: int, error: dict[str, Any]) -> None:
        """Answer `status` with `{"error": error}` and close the connection: for what is
        refused before any request reaches the app."""
        body = json.dumps({"error": error}).encode()
        head = [STATUS_LINE[status]]
        for name, value in self.server_state.default_headers:
            head.extend([name, b": ", value, b"\r\n"])
        head.append(b"content-type: application/json\r\ncontent-length: %d\r\n" % len(body))
        self.transport.write(b"".join([*head, b"connection: close\r\n\r\n", body]))
        self.transport.close()
