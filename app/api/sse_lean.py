"""sse-starlette's `EventSourceResponse` with one helper task per stream instead of four.

Why: an open stream's memory is what it holds while it waits, and sse-starlette waits in
four anyio tasks per response (the stream, the heartbeat, the shutdown listener, the
disconnect listener), each with its task handle, completion event, cancel scope and
coroutine frames: about a quarter of what an open, slowly paced stream cost
(`python -m bench.memory`). Here the request's own task streams (sse-starlette's
`_stream_response`: encoding, send timeout, closing the body on failure), and one watcher
task does the waiting: for the client's disconnect (then `client_close_handler_callable`
and the stream is cancelled, as before), and, between messages, the heartbeat (sent under
the same lock and send timeout as sse-starlette's). Server shutdown reaches the stream
through sse-starlette's own watcher (one per event loop), which cancels it, as before.

What the waiting holds is plain asyncio, not anyio: the watcher's wait for the client
under `asyncio.timeout` (an anyio cancel scope in a parked task also keeps a task state,
weak references and two sets: ~1.8 KB more per open stream), the stream stopped by
cancelling its task (`_Stop`) rather than an anyio scope around it, each send under
`asyncio.timeout` (sse-starlette's anyio scope there left the task's anyio state behind
for the rest of the stream), and the send lock an `asyncio.Lock` (anyio's makes a 528-byte
deque block up front; asyncio's only when a second sender waits). The service runs on
asyncio only. The heartbeat's and the sends' timeouts are `app.domain.deadlines.timeout`,
`asyncio.timeout` on one heap per loop, so an open stream holds no timer of the loop's.

What goes on the wire, and when, is unchanged; only how the waiting is arranged differs,
and how a reader that took nothing for `send_timeout` is reported: one info line, not
an unhandled error with its traceback (twice: ours and the server's) that any client
could produce at will by not reading, and the client close handler is called as for a
hang-up (sse-starlette called it only when the server said the client left). The
connection is cut as before (under the service's HTTP protocol, by the protocol itself:
`app.api.http_protocol`).
A response that uses what this does not arrange (HEAD, a `data_sender_callable`, a
`shutdown_event` or grace period) is served by sse-starlette's own `__call__`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterable
from typing import Any

from sse_starlette.event import ServerSentEvent, ensure_bytes
from sse_starlette.sse import AppStatus, EventSourceResponse, SendTimeoutError
from starlette.types import Message, Receive, Scope, Send

from app.api.handoff import take_handoff
from app.api.stream_head import FailedBeforeOutput, HeldHead
from app.domain import deadlines

log = logging.getLogger("chat_bff.streams")

# Private parts of sse-starlette 3.7: its per-loop shutdown watcher and two methods of
# the response. A release without them serves every stream with sse-starlette's own four
# tasks instead: more memory per open stream, the same behaviour.
try:
    from sse_starlette.sse import (
        _ensure_watcher_started_on_this_loop,
        _get_shutdown_state,
    )
except ImportError:  # pragma: no cover - depends on the installed sse-starlette
    LEAN_AVAILABLE = False
else:
    LEAN_AVAILABLE = all(
        hasattr(EventSourceResponse, name) for name in ("_stream_response", "_send_with_timeout")
    )


def shutdown_tables() -> list[set[Any]]:
    """sse-starlette's set of this loop's open streams (their `_Stop`s), which keeps
    the table of a burst's peak (`app.observability.memory.compact` rebuilds it)."""
    if not LEAN_AVAILABLE:
        return []
    return [_get_shutdown_state().events]


class _Stop:
    """Cancels the streaming task, once, while it streams: the watcher calls `set()` when
    the client is gone, and so does sse-starlette's shutdown watcher (it takes this for
    one of its shutdown events). An asyncio cancellation, not an anyio scope: a scope
    keeps two sets, and its task an anyio state with a weak reference, for as long as
    the stream is open."""

    __slots__ = ("live", "requested", "task")

    def __init__(self, task: asyncio.Task[Any]) -> None:
        self.task = task
        self.live = True  # the task is streaming: a cancel now is ours to absorb
        self.requested = False

    def set(self) -> None:
        if self.live and not self.requested:
            self.requested = True
            self.task.cancel()


# The header list sse-starlette builds for a response's `headers` argument, by its items:
# the same few every time, and building them is most of its constructor.
_RAW_HEADERS: dict[tuple[tuple[str, str], ...], list[tuple[bytes, bytes]]] = {}
# The arguments `__init__` sets itself; any other goes to sse-starlette's constructor.
_OWN = frozenset(
    {"headers", "ping", "sep", "ping_message_factory", "send_timeout"}
    | {"client_close_handler_callable"}
)


class LeanEventSourceResponse(EventSourceResponse):
    # Set by `app.api.streaming.sse_response`: the start held until the run says something.
    head: HeldHead | None = None

    def __init__(self, content: Any, **kwargs: Any) -> None:
        """sse-starlette's constructor, or, for an async body and the arguments the
        service passes (`_OWN`), the same attributes set here (about 7% of the route's
        own CPU before the first token went to that constructor: a `MutableHeaders`
        built and rendered, an anyio lock that looks up the running event loop's library
        and is then replaced). `tests/api/test_sse_lean_construct.py` holds the two to
        the same attributes."""
        headers = kwargs.get("headers") or {}
        key = tuple(headers.items())
        raw = _RAW_HEADERS.get(key)
        sep = kwargs.get("sep")
        if (
            raw is None
            or not LEAN_AVAILABLE
            or not _OWN.issuperset(kwargs)
            or not isinstance(content, AsyncIterable)
            or sep not in (None, "\r\n", "\r", "\n")
        ):
            super().__init__(content, **kwargs)
            if LEAN_AVAILABLE:
                self._send_lock = asyncio.Lock()  # type: ignore[assignment]  # same use
                if len(_RAW_HEADERS) < 16:  # one or two in practice
                    _RAW_HEADERS[key] = list(self.raw_headers)
            return
        self.sep = sep or self.DEFAULT_SEPARATOR
        self.body_iterator = content
        self.status_code = 200
        self.media_type = "text/event-stream"
        self.background = None
        self.data_sender_callable = None
        self.send_timeout = kwargs.get("send_timeout")
        self.raw_headers = list(raw)
        ping = kwargs.get("ping")
        self.ping_interval = self.DEFAULT_PING_INTERVAL if ping is None else ping
        self.ping_message_factory = kwargs.get("ping_message_factory")
        self.client_close_handler_callable = kwargs.get("client_close_handler_callable")
        self._shutdown_event = None
        self._shutdown_grace_period = 0
        self._cleanup_timeout = self.DEFAULT_CLEANUP_TIMEOUT
        self.active = True
        self._send_lock = asyncio.Lock()  # type: ignore[assignment]  # same use

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        handoff = take_handoff(scope)
        if handoff is not None:  # served from the request context middleware
            handoff.take(self, scope, receive, send)
            return
        if (
            not LEAN_AVAILABLE
            or scope["type"] != "http"
            or scope["method"].upper() == "HEAD"
            or self.data_sender_callable is not None
            or self._shutdown_event is not None
            or self._shutdown_grace_period > 0
        ):
            if self.head is not None:
                self.head.sent = True  # nothing held: sse-starlette sends as it goes
            await super().__call__(scope, receive, send)
            return
        _ensure_watcher_started_on_this_loop()
        shutdown = _get_shutdown_state().events
        task = asyncio.current_task()
        assert task is not None
        stop = _Stop(task)
        shutdown.add(stop)  # type: ignore[arg-type]  # only its set() is called
        out = send if self.head is None else self.head.send(send)
        watcher = asyncio.get_running_loop().create_task(self._watch(receive, out, stop))
        unstarted: FailedBeforeOutput | None = None
        try:
            if AppStatus.should_exit:
                stop.set()
            await self._stream_response(out)
        except asyncio.CancelledError:
            # Stopped by the watcher or the shutdown: the stream ends here, as it did when
            # they cancelled its anyio scope. Any other cancel goes on.
            if not stop.requested or task.uncancel() > 0:
                raise
        except FailedBeforeOutput as failure:
            unstarted = failure  # answered below, once the watcher is gone
        except SendTimeoutError:
            await self._dropped()
            return
        finally:
            stop.live = False
            shutdown.discard(stop)
            watcher.cancel()
            await asyncio.wait((watcher,))  # raises only if this task is cancelled
        if unstarted is not None and self.head is not None:
            await self.head.answer(unstarted, scope, receive, send)
            del unstarted
            return
        failed = None if watcher.cancelled() else watcher.exception()
        if failed is not None:
            # Raised from here, the error's traceback holds this frame, whose locals hold
            # the error and the watcher (which holds it too): a reference cycle keeping the
            # response and its request until a full collection, rare while serving.
            del watcher
            try:
                raise failed
            finally:
                del failed
        if self.background is not None:
            await self.background()

    async def _dropped(self) -> None:
        """The client took nothing for the whole send timeout: its stream ends (it can
        resume), which is no fault of ours, and it is gone as surely as one that hung up
        (`client_close_handler_callable`: a stateless run is cancelled), unless the
        watcher heard it leave first."""
        log.info("stream dropped: its reader took nothing for %gs", self.send_timeout)
        if self.active:
            self.active = False
            if self.client_close_handler_callable is not None:
                await self.client_close_handler_callable({"type": "http.disconnect"})

    async def _watch(self, receive: Receive, send: Send, stop: _Stop) -> None:
        """Until the client disconnects (then the stream is cancelled), sending the
        heartbeat whenever `ping_interval` passes without a message from the client."""
        interval = self.ping_interval or None
        try:
            while self.active:
                try:
                    async with deadlines.timeout(interval):
                        message = await receive()
                except TimeoutError:
                    await self._heartbeat(send)
                    continue
                if message["type"] == "http.disconnect":
                    self.active = False
                    if self.client_close_handler_callable is not None:
                        await self.client_close_handler_callable(message)
                    return
        finally:
            stop.set()

    async def _send_with_timeout(self, send: Send, message: Message) -> None:
        """sse-starlette's, under asyncio's timeout rather than anyio's scope (which leaves
        an anyio state on the task for the rest of the stream).

        Every message sent here follows the start, which carried `raw_headers`: the list
        (a tuple and two byte strings a header, ~0.6 KB) is let go for the rest of the
        stream, as nothing reads it again."""
        if self.raw_headers:
            self.raw_headers = []
        deadline = deadlines.timeout(self.send_timeout)
        try:
            async with deadline:
                await send(message)
        except TimeoutError:
            if deadline.expired():
                raise SendTimeoutError() from None
            raise

    async def _heartbeat(self, send: Send) -> None:
        factory = self.ping_message_factory or (lambda: ServerSentEvent(comment="ping"))
        frame = ensure_bytes(factory(), self.sep)
        async with self._send_lock:
            if self.active:
                try:
                    await self._send_with_timeout(
                        send, {"type": "http.response.body", "body": frame, "more_body": True}
                    )
                except SendTimeoutError:
                    await self._dropped()  # the watcher ends, and the stream with it
