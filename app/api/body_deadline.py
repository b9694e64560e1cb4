"""A deadline for a request's body to arrive.

Why: a client that declares a body (`Content-Length`, or chunked) and then sends it a
byte at a time, or stops, held its connection and the request's task for ever: uvicorn
waits for a body as long as it takes, and only uploads had a deadline of their own
(`UPLOAD_TIMEOUT_SECONDS`, counted by the file service).

How: `BodyDeadline.receive` waits for each piece of the body under one deadline counted
from the request's start (`REQUEST_BODY_TIMEOUT_SECONDS`). Past it, whoever reads the body
gets `BodyTimedOut`: an HTTPException, which FastAPI passes through from its body read to
the exception handlers, so the client gets 408 `request_timeout` in the error body of its
surface, with `Connection: close` (the server closes the connection after the answer, so
the rest of the body is never read). The route never ran: nothing is stored. A piece that
has already arrived is still handed over past the deadline (the server's `receive` gives
it without waiting).

Once the body has arrived whole (or the client left), `receive` is the server's own again:
a stream's watcher, waiting for the client to leave for as long as the stream is open,
holds no frame of this and no timer.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable

from starlette.types import Message, Receive

from app.api.errors import RefusedBody
from app.domain import deadlines


class BodyTimedOut(RefusedBody):
    """The body did not arrive within its deadline: 408, and the connection closed."""

    def __init__(self, seconds: float) -> None:
        super().__init__(
            408,
            "request_timeout",
            None,
            f"The request body did not arrive within {seconds:g} s.",
            headers={"Connection": "close"},
        )


class BodyDeadline:
    """The server's `receive`, with the request's body due `seconds` from now."""

    __slots__ = ("_receive", "_when", "arrived", "passed", "seconds")

    def __init__(self, receive: Receive, seconds: float) -> None:
        self._receive = receive
        self._when = asyncio.get_running_loop().time() + seconds
        self.seconds = seconds
        self.arrived = False  # the body's last piece was handed over (or the client left)
        self.passed = False

    def receive(self) -> Awaitable[Message]:
        if self.arrived:
            return self._receive()
        return self._next_piece()

    async def _next_piece(self) -> Message:
        if self.passed:
            raise BodyTimedOut(self.seconds)
        timer = deadlines.Timeout(self._when)
        try:
            async with timer:
                message = await self._receive()
        except TimeoutError:
            if not timer.expired():
                raise
            self.passed = True
            raise BodyTimedOut(self.seconds) from None
        if message["type"] != "http.request" or not message.get("more_body", False):
            self.arrived = True
        return message
