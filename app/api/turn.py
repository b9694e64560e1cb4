"""The one stateless turn path.

`/api/chat`, `/v1/chat/completions` and `/v1/responses` differ only in how they read the
request (each route's reader makes a `StatelessTurn`) and which wire writes the answer
(a `Wire`: frames for a stream, one body for a whole answer). Everything else lives here,
once:

    start the run ----- stream? ---- yes: SSE of wire.encode(events)  (client hangs up ->
                           |                                          cancel, if the turn says so;
                           |          /v1/chat/completions first waits for the first output,
                           |          and answers a failure before it with its status)
                           no: wait for the end (client hangs up -> cancel, if the turn says
                               so) -> wire.answer(handle): the body, or the run's failure raised

Cancelling a stateless run closes its upstream call: nobody is left to read the answer.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from fastapi.responses import JSONResponse
from starlette.requests import Request
from starlette.responses import Response

from app.api.stream_head import HeldHead
from app.api.streaming import Encoded, StreamConfig, sse_response
from app.domain.events import ErrorEvent, RunEnd, SequencedEvent
from app.domain.identity import Caller
from app.domain.messages import Message
from app.runs.handle import RunHandle
from app.runs.requests import TurnInput
from app.runs.turns import PrepareHistory, Runs


class Wire(Protocol):
    """One wire protocol's writer for one run."""

    def encode(self, batch: list[SequencedEvent]) -> Encoded:
        """SSE frames for a batch of the run's events."""
        ...

    def farewell(self) -> bytes:
        """The last frames of a stream the service cuts while draining: the run was
        interrupted, the client may retry."""
        ...

    async def answer(self, handle: RunHandle) -> dict[str, Any]:
        """The whole answer of an ended run; raises the run's failure when it failed."""
        ...


@dataclass(frozen=True)
class StatelessTurn:
    """What a route's request reader makes of its body."""

    history: list[Message]
    input: TurnInput
    stream: bool
    # `on_disconnect=continue` (/api/chat) lets the run finish after a hang-up.
    cancel_on_hangup: bool = True
    # Acts on the history before the run starts (/api/chat: decide the approvals it answers).
    prepare: PrepareHistory | None = None
    # /v1/chat/completions: a failure before any output is answered with its HTTP status, so
    # the stream's head waits for the model's first output (`app.api.stream_head`).
    status_before_stream: bool = False


def wants_stream(request: Request, flag: bool) -> bool:
    return flag or "text/event-stream" in request.headers.get("accept", "")


async def run_turn(
    request: Request,
    caller: Caller,
    runs: Runs,
    stream: StreamConfig,
    turn: StatelessTurn,
    wire_for: Callable[[RunHandle], Wire],
) -> Response:
    handle = await runs.start_stateless(caller, turn.history, turn.input, prepare=turn.prepare)
    # The run's task goes first: its model call is on its way upstream while this builds
    # and sends the response, not after it (time to first token).
    await asyncio.sleep(0)
    wire = wire_for(handle)
    if turn.stream:
        return sse_response(
            handle.stream(),  # the only reader: sent events are let go
            wire.encode,
            stream,
            on_disconnect=handle.cancel if turn.cancel_on_hangup else None,
            farewell=wire.farewell,
            head=HeldHead(handle) if turn.status_before_stream else None,
        )
    await _wait(request, handle, cancel_on_hangup=turn.cancel_on_hangup)
    return JSONResponse(await wire.answer(handle))


async def _wait(request: Request, handle: RunHandle, *, cancel_on_hangup: bool) -> None:
    """Wait for the run to end. Starlette never cancels the handler of a non-streaming
    response when its client goes away, so listen for the hang-up here."""
    if not cancel_on_hangup:
        await handle.wait()
        return
    # One task (the hang-up listener), not two: `asyncio.wait` waits on the run's own
    # task and never cancels it.
    hangup = asyncio.ensure_future(_hangup(request))
    try:
        await asyncio.wait({handle.ended(), hangup}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        hangup.cancel()
        if not handle.done:
            await handle.cancel()


async def _hangup(request: Request) -> None:
    # The body has been read: the next message the server sends is the disconnect.
    while (await request.receive())["type"] != "http.disconnect":
        pass


def interrupted_events(run_id: str) -> list[SequencedEvent]:
    """What a stateless wire's encoder is fed to end a stream cut by shutdown: the error
    (retryable) and the run's end as `interrupted`."""
    return [
        SequencedEvent(
            seq=0,
            event=ErrorEvent(
                run_id=run_id,
                code="shutting_down",
                message="The service is restarting; send the request again.",
                retryable=True,
            ),
        ),
        SequencedEvent(seq=0, event=RunEnd(run_id=run_id, status="interrupted")),
    ]
