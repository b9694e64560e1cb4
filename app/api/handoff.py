"""A streaming response served once the routing layers under the request context have
returned, not from inside them.

Why: an open stream is parked inside every frame that called its response. Under the
request context middleware that is the body limit, Starlette's exception middleware,
FastAPI's exit-stack middleware, the router and included routers, the route, the
route's exception wrapper and FastAPI's handler with its two exit stacks: thirteen
coroutine frames, three `AsyncExitStack`s (a 528-byte deque block each) and the
`Request` objects they hold, for as long as the stream is open, though none of them
has anything left to do once the response has been made (`python -m bench.memory`).

How: `RequestContextMiddleware` puts a `Handoff` in the scope. A response that can be
handed off (`LeanEventSourceResponse`) takes it out, leaves itself there with what it
was called with and returns without sending; the layers under the middleware finish
(FastAPI closes its exit stacks: no dependency of ours has teardown code), and the
middleware then serves the response with the same scope, `receive` and `send`. The
send and receive wrappers of those layers are closures and keep working; only their
frames are gone. Everything the middleware does for a request (request id, access log
line, metrics, the drain's stream count, the log line and 500 of an unhandled error)
still spans the whole stream, and the layers above it are untouched.

What differs: an exception the stream raises once it has started reaches the middleware
as itself, not wrapped by Starlette's exception middleware (which could only re-raise
it: the response had started).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from starlette.types import Receive, Scope, Send

HANDOFF_KEY = "chat_bff.handoff"
# FastAPI's per-request exit stacks, closed by the time a handed-off response is served.
_FASTAPI_STACKS = ("fastapi_inner_astack", "fastapi_function_astack", "fastapi_middleware_astack")

ASGICall = Callable[[Scope, Receive, Send], Awaitable[None]]


class Handoff:
    __slots__ = ("_call", "_receive", "_scope", "_send")

    def __init__(self) -> None:
        self._call: ASGICall | None = None
        self._scope: Scope | None = None
        self._receive: Receive | None = None
        self._send: Send | None = None

    def take(self, call: ASGICall, scope: Scope, receive: Receive, send: Send) -> None:
        """Called by the response in place of serving itself."""
        self._call, self._scope, self._receive, self._send = call, scope, receive, send

    async def serve(self) -> None:
        """Serves the response left here, if any (once)."""
        call, scope, receive, send = self._call, self._scope, self._receive, self._send
        self._call = self._scope = self._receive = self._send = None
        if call is None or scope is None or receive is None or send is None:
            return
        for key in _FASTAPI_STACKS:
            scope.pop(key, None)
        await call(scope, receive, send)


def take_handoff(scope: Scope) -> Handoff | None:
    """The scope's handoff, removed from it (a response is handed off at most once)."""
    found = scope.pop(HANDOFF_KEY, None)
    return found if isinstance(found, Handoff) else None
