"""Conversation runs over HTTP: start, follow (EventSource + Last-Event-ID), cancel,
client tool results, regenerate and edit. Thin: the work is in `app.runs.turns`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Annotated, Any

from fastapi import Query, Request, Response, status
from fastapi.responses import JSONResponse

from app.api import idempotency
from app.api.deps import (
    AuthDep,
    CallerDep,
    DbDep,
    IdempotencyDep,
    RunsDep,
    StreamDep,
    StreamSlot,
)
from app.api.encoders import native
from app.api.event_streams import event_stream
from app.api.exact_params import RUN_SEQ_MAX, last_event_id_header, resume_position
from app.api.idempotent_turns import KeepOutcome, run_id_of, run_once, start_once
from app.api.routing import api_router
from app.api.schemas.runs import (
    EditMessage,
    Regenerate,
    RunStarted,
    RunState,
    SendMessage,
    ToolResultsIn,
    ToolResultsOut,
)
from app.api.streaming import StreamConfig, sse_response
from app.api.turn import wants_stream
from app.auth.authenticator import Authenticator
from app.domain.events import ErrorEvent
from app.domain.identity import Caller
from app.runs.handle import RunHandle
from app.runs.requests import TurnInput
from app.runs.turns import KeepStart, Runs, ToolResult
from app.store.database import Database, Tx
from app.store.idempotency import Outcome
from app.translate.openai_chat.read import tool_choice_from_openai, tools_from_openai

router = api_router(prefix="/api/conversations", tags=["runs"])

# How soon a browser's EventSource comes back after a dropped connection (its default is
# 3 s); resuming is cheap, the events are replayed from the log.
RECONNECT_MS = 1000

_STARTED: dict[int | str, dict[str, Any]] = {
    202: {"model": RunStarted, "description": "The run started; follow `events_url`."},
    200: {
        "description": "Native SSE of the run (with `Accept: text/event-stream`).",
        "content": event_stream("RunEvent"),
    },
    409: {"description": "A run is already active (`active_run_id` in the error)."},
}


def events_url(conversation_id: str, run_id: str) -> str:
    return f"/api/conversations/{conversation_id}/runs/{run_id}/events"


def _resume_elsewhere(run_id: str, url: str) -> Callable[[], bytes]:
    """The last frame of a stream this instance cuts while shutting down: the run goes on
    (or was checkpointed); the reader resumes from `url` with its Last-Event-ID."""

    def farewell() -> bytes:
        return native.error_frame(
            ErrorEvent(
                run_id=run_id,
                code="shutting_down",
                message="This instance is restarting; resume from resume_url.",
                retryable=True,
                resume_url=url,
            )
        )

    return farewell


def stream_token(auth: Authenticator, caller: Caller, run_id: str) -> str | None:
    """A token bound to this run's events, for EventSource; None without authentication."""
    if auth.development:
        return None
    return auth.stream_tokens.mint(caller, run_id=run_id).token


def _answer(
    request: Request,
    run: RunHandle,
    caller: Caller,
    stream: bool,
    config: StreamConfig,
    auth: Authenticator,
) -> Response:
    assert run.conversation_id is not None
    if wants_stream(request, stream):
        return sse_response(
            run.events(0),
            native.frames,
            config,
            farewell=_resume_elsewhere(run.run_id, events_url(run.conversation_id, run.run_id)),
            retry_ms=RECONNECT_MS,
        )
    body = RunStarted(
        run_id=run.run_id,
        events_url=events_url(run.conversation_id, run.run_id),
        truncated_input=run.truncated_input,
        stream_token=stream_token(auth, caller, run.run_id),
    )
    return JSONResponse(body.model_dump(), status_code=status.HTTP_202_ACCEPTED)


@dataclass(frozen=True)
class _Answer:
    """How a route that starts a run answers: the new run (202, or its SSE), or, for a
    repeat under the same Idempotency-Key, the first request's run, never a second one.
    A streamed repeat follows that run's events from the start, as the first answer did;
    otherwise the first 202 again, with a fresh stream token."""

    request: Request
    conversation_id: str
    caller: Caller
    stream: bool
    runs: Runs
    config: StreamConfig
    auth: Authenticator
    tokens: bool = True  # a 202 carries a stream token; tool results' answer does not

    async def once(
        self,
        db: Database,
        key: idempotency.RequestKey | None,
        start: Callable[[KeepStart | None], Awaitable[RunHandle]],
    ) -> Response:
        """The run `start` starts, done once under the key (when one was sent)."""
        started = await run_once(db, self.caller.user_id, key, start, self._kept_as)
        if isinstance(started, Outcome):
            return self.again(started)
        return self.started(started)

    def started(self, run: RunHandle) -> Response:
        return _answer(self.request, run, self.caller, self.stream, self.config, self.auth)

    def again(self, kept: Outcome) -> Response:
        run_id, cid, caller = run_id_of(kept), self.conversation_id, self.caller
        if run_id is not None and wants_stream(self.request, self.stream):
            return sse_response(
                self.runs.follow(caller.user_id, run_id, conversation_id=cid, after=0),
                native.frames,
                self.config,
                farewell=_resume_elsewhere(run_id, events_url(cid, run_id)),
                retry_ms=RECONNECT_MS,
            )
        body = kept.body
        if run_id is not None and self.tokens:
            body = {**body, "stream_token": stream_token(self.auth, caller, run_id)}
        return JSONResponse(body, status_code=kept.status)

    def _kept_as(self, run_id: str, truncated: bool) -> Outcome:
        started = {
            "run_id": run_id,
            "events_url": events_url(self.conversation_id, run_id),
            "truncated_input": truncated,
        }
        return Outcome(status.HTTP_202_ACCEPTED, started, self.conversation_id)


def _turn(tools: Any, tool_choice: Any, model: str | None) -> TurnInput:
    specs = tools_from_openai([t.model_dump(exclude_none=True) for t in tools or []])
    return TurnInput(
        client_tools=specs,
        tool_choice=tool_choice_from_openai(tool_choice),
        model_id=model,
        retractable=True,  # native readers replace the message on `step_reset`
    )


@router.post(
    "/{conversation_id}/messages",
    status_code=202,
    responses=_STARTED,
    response_model=RunStarted,
    summary="Send a user message and start a run.",
    openapi_extra=idempotency.OPENAPI,
)
async def send_message(
    conversation_id: str,
    body: SendMessage,
    request: Request,
    runs: RunsDep,
    config: StreamDep,
    auth: AuthDep,
    caller: CallerDep,
    db: DbDep,
    idempotency_key: IdempotencyDep,
) -> Response:
    turn = _turn(body.tools, body.tool_choice, body.model)

    def start(keep: KeepStart | None) -> Awaitable[RunHandle]:
        return runs.send(caller, conversation_id, body.content, turn, keep=keep)

    answer = _Answer(request, conversation_id, caller, body.stream, runs, config, auth)
    return await answer.once(db, idempotency_key, start)


@router.get(
    "/{conversation_id}/runs/{run_id}/events",
    dependencies=[StreamSlot],
    responses={
        200: {
            "description": "Native SSE: replays the events after `Last-Event-ID` (or "
            "`after`), then follows the run live; closes after `run_end`.",
            "content": event_stream("RunEvent"),
        },
        204: {
            "description": "The run has ended and the reader has every event: an "
            "EventSource stops reconnecting."
        },
    },
    summary="Follow a run (EventSource); resume with Last-Event-ID.",
)
async def run_events(
    conversation_id: str,
    run_id: str,
    runs: RunsDep,
    config: StreamDep,
    caller: CallerDep,
    after: Annotated[
        int | None,
        Query(ge=0, le=RUN_SEQ_MAX, description="Replay events after this sequence number."),
    ] = None,
    last_event_id: Annotated[str | None, last_event_id_header(RUN_SEQ_MAX)] = None,
) -> Response:
    position = after or 0
    if last_event_id:
        position = max(position, resume_position(last_event_id, RUN_SEQ_MAX))
    # Before any 200 goes out: a foreign or unknown run is a plain 404, and a finished
    # run with nothing after the reader's position is 204, which tells a browser's
    # EventSource to stop reconnecting (it reconnects after every close otherwise).
    finished, last_seq = await runs.position(caller.user_id, run_id, conversation_id)
    if finished and position >= last_seq:
        return Response(status_code=204)
    batches = runs.follow(caller.user_id, run_id, conversation_id=conversation_id, after=position)
    return sse_response(
        batches,
        native.frames,
        config,
        farewell=_resume_elsewhere(run_id, events_url(conversation_id, run_id)),
        retry_ms=RECONNECT_MS,
    )


@router.post(
    "/{conversation_id}/runs/{run_id}/cancel",
    response_model=RunState,
    summary="Stop a run; partial text is kept. Harmless when it already ended.",
)
async def cancel_run(
    conversation_id: str,
    run_id: str,
    runs: RunsDep,
    caller: CallerDep,
) -> RunState:
    final = await runs.cancel(caller.user_id, run_id, conversation_id)
    return RunState(run_id=run_id, status=final)


@router.post(
    "/{conversation_id}/tool-results",
    response_model=ToolResultsOut,
    responses={
        200: {
            "description": "Stored; `run_id` is set when the conversation continued.",
            "content": event_stream("RunEvent"),
        },
        404: {"description": "Unknown or foreign conversation or tool call."},
        409: {"description": "Already answered, or a run is active."},
    },
    summary="Submit client tool results (AIKit submitResult); the run continues.",
    openapi_extra=idempotency.openapi(
        "A repeat answers the first one's continuation (its run's events from the start "
        "when streamed) instead of 409 `tool_call_already_answered`."
    ),
)
async def submit_tool_results(
    conversation_id: str,
    body: ToolResultsIn,
    request: Request,
    runs: RunsDep,
    config: StreamDep,
    auth: AuthDep,
    caller: CallerDep,
    db: DbDep,
    idempotency_key: IdempotencyDep,
) -> Response:
    results = [ToolResult(r.toolCallId, r.status, r.result) for r in body.results]

    async def start(keep: KeepOutcome | None) -> RunHandle | None:
        async def keep_continuation(tx: Tx, run_id: str | None) -> None:
            assert keep is not None
            continued = _continued(conversation_id, run_id).model_dump()
            await keep(tx, Outcome(200, continued, conversation_id))

        kept = None if keep is None else keep_continuation
        return await runs.submit_tool_results(caller, conversation_id, results, keep=kept)

    if idempotency_key is None:
        run = await start(None)
    else:
        started = await start_once(db, idempotency_key.of(caller.user_id), start)
        if isinstance(started, Outcome):
            answer = _Answer(request, conversation_id, caller, body.stream, runs, config, auth)
            return replace(answer, tokens=False).again(started)
        run = started
    if run is not None and wants_stream(request, body.stream):
        return _answer(request, run, caller, True, config, auth)
    return JSONResponse(
        _continued(conversation_id, None if run is None else run.run_id).model_dump()
    )


def _continued(conversation_id: str, run_id: str | None) -> ToolResultsOut:
    """Tool results' answer: the run that continues the conversation, or still waiting."""
    if run_id is None:
        return ToolResultsOut(run_id=None, events_url=None, waiting=True)
    return ToolResultsOut(
        run_id=run_id, events_url=events_url(conversation_id, run_id), waiting=False
    )


@router.post(
    "/{conversation_id}/regenerate",
    status_code=202,
    responses=_STARTED,
    response_model=RunStarted,
    summary="Answer the last user message again (the old answer is kept, superseded).",
    openapi_extra=idempotency.OPENAPI,
)
async def regenerate(
    conversation_id: str,
    request: Request,
    runs: RunsDep,
    config: StreamDep,
    auth: AuthDep,
    caller: CallerDep,
    db: DbDep,
    idempotency_key: IdempotencyDep,
    body: Regenerate | None = None,
) -> Response:
    body = body or Regenerate()  # every option is optional, so is the body
    turn = TurnInput(client_tools=[], model_id=body.model, retractable=True)

    def start(keep: KeepStart | None) -> Awaitable[RunHandle]:
        return runs.regenerate(caller, conversation_id, turn, keep=keep)

    answer = _Answer(request, conversation_id, caller, body.stream, runs, config, auth)
    return await answer.once(db, idempotency_key, start)


@router.put(
    "/{conversation_id}/messages/{message_id}",
    status_code=202,
    responses=_STARTED,
    response_model=RunStarted,
    summary="Edit the last user message and answer it again (old version kept).",
    openapi_extra=idempotency.OPENAPI,
)
async def edit_message(
    conversation_id: str,
    message_id: str,
    body: EditMessage,
    request: Request,
    runs: RunsDep,
    config: StreamDep,
    auth: AuthDep,
    caller: CallerDep,
    db: DbDep,
    idempotency_key: IdempotencyDep,
) -> Response:
    turn = TurnInput(client_tools=[], model_id=body.model, retractable=True)

    def start(keep: KeepStart | None) -> Awaitable[RunHandle]:
        return runs.edit(caller, conversation_id, message_id, body.content, turn, keep=keep)

    answer = _Answer(request, conversation_id, caller, body.stream, runs, config, auth)
    return await answer.once(db, idempotency_key, start)
