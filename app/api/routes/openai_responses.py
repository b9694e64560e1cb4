"""`POST /v1/responses`: the OpenAI Responses surface, stateless unless a conversation.

The official openai SDK (`client.responses.create(...)`, also with `stream=True`) and
AIKit's `useOpenAIStreamAdapter` work against it unchanged. Each request is one stateless
run (like `/v1/chat/completions`): nothing is stored; a client keeps its history and
sends it back as input items (`input += response.output` works, see
`app.translate.openai_responses`). With `conversation` (an id from `/v1/conversations`
or `/api/conversations`) the request is instead a turn of that durable conversation: its
last input item is the user's message, the stored history is the rest. With
`previous_response_id` naming a stored response it is the next turn of that response's
conversation (`app.api.responses_previous`). Either way,
`mcp_approval_response` input items decide pending approvals and the turn continues in
the same request (`app.api.responses_approvals`). With `background: true` the answer
is the Response at once, in progress, and the run is a conversation's (a new one holds
the request when none is named: `app.api.responses_background`). Fields that
could smuggle identity or routing are refused; other OpenAI parameters we do not act on
are accepted and ignored. Errors answer in OpenAI's shape (`app.api.errors`). The wire
mapping is in `app.api.encoders.responses`; retrieving and cancelling a stored response
is `app.api.routes.openai_responses_stored`.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable
from functools import partial
from typing import Any

from fastapi import Request
from fastapi.responses import JSONResponse, Response

from app.api import idempotency
from app.api.deps import (
    ApprovalsDep,
    CallerDep,
    DbDep,
    IdempotencyDep,
    RunsDep,
    StreamDep,
    ToolCatalogDep,
)
from app.api.encoders.responses import ResponsesEncoder
from app.api.event_streams import event_stream
from app.api.idempotency import RequestKey
from app.api.idempotent_turns import run_id_of, run_once
from app.api.openai_params import responses_options
from app.api.responses_approvals import (
    answers_approvals,
    decide_in_conversation,
    stateless_claims,
)
from app.api.responses_background import hold_request, let_go, refuse_unstored
from app.api.responses_previous import (
    Previous,
    check_latest,
    continue_calls,
    outputs_only,
    still_latest,
)
from app.api.responses_previous import resolve as resolve_previous
from app.api.responses_stored import as_it_stands, response_id, stored_run, tool_echo
from app.api.routing import api_router
from app.api.schemas.openai_responses import ResponsesRequest
from app.api.schemas.responses_items import ResponseObject
from app.api.streaming import StreamConfig, sse_response
from app.api.turn import StatelessTurn, interrupted_events, run_turn, wants_stream
from app.domain.errors import ChatBffError, InvalidRequest
from app.domain.events import SequencedEvent
from app.domain.identity import Caller
from app.domain.stream import ToolChoice, ToolSpec
from app.runs.handle import RunHandle
from app.runs.requests import TurnInput
from app.runs.turns import KeepStart, Runs
from app.store.database import Database
from app.store.idempotency import Outcome
from app.toolruntime.approvals import ApprovalService
from app.translate.openai_responses.read import messages_from_responses_input
from app.translate.openai_responses.tools import tool_choice_from_responses, tools_from_responses

router = api_router(prefix="/v1", tags=["openai-compatible"])


def _turn_input(
    body: ResponsesRequest, client_tools: list[ToolSpec], choice: ToolChoice | None
) -> TurnInput:
    return TurnInput(
        client_tools=client_tools,
        tool_choice=choice,
        model_id=body.model,
        max_output_tokens=body.max_output_tokens,
        temperature=body.temperature,
        parallel_tool_calls=body.parallel_tool_calls,
        options=responses_options(body),
        wire_options=_wire_options(body),
    )


def _wire_options(body: ResponsesRequest) -> dict[str, str]:
    """Stored with the run, so a replay (`GET /v1/responses/{id}`) shows what the stream did."""
    options = {"background": "true"} if body.background else {}
    if body.client_tool_items == "submission_request":
        options["client_tool_items"] = "submission_request"
    return options


def _conversation_id(value: Any) -> str:
    cid = value.get("id") if isinstance(value, dict) else value
    if not isinstance(cid, str) or not cid:
        raise InvalidRequest("conversation is an id or {id}.", param="conversation")
    return cid


async def _conversation_turn(
    body: ResponsesRequest,
    request: Request,
    runs: Runs,
    stream: StreamConfig,
    caller: Caller,
    approvals: ApprovalService,
    held: frozenset[str],
    db: Database,
    idempotency_key: RequestKey | None,
    cid: str,
    previous: Previous | None = None,
) -> Response:
    """A turn of a durable conversation: the input's last item is the user's message (or
    the input answers the conversation's pending approvals, or, continuing a `previous`
    response, its function calls); the conversation holds the history (and its own
    system prompt: `instructions` is refused, unless `previous` found them equal). The
    run is durable: a client hanging up does not stop it. Under an Idempotency-Key a
    repeated message or function output answers the first one's run (`_again`), never a
    second turn; a repeated approval answer is refused as already decided, as without a
    key."""
    if body.instructions is not None and previous is None:
        raise InvalidRequest(
            "instructions cannot be combined with conversation; set the conversation's "
            "system prompt instead.",
            param="instructions",
        )
    client_tools = tools_from_responses(body.tools)
    choice = tool_choice_from_responses(body.tool_choice)
    outputs = None if previous is None else outputs_only(body.input)
    started: RunHandle | Outcome
    if outputs is not None or answers_approvals(body.input):
        assert isinstance(body.input, list)
        if previous is not None and outputs is not None:
            started = await continue_calls(db, runs, caller, previous, outputs, idempotency_key)
        else:
            if previous is not None:
                await check_latest(db, caller.user_id, previous)
            started = await decide_in_conversation(approvals, runs, caller, cid, body.input)
        # The run continues the paused turn with that turn's client tools.
        options = await runs.manager.stored_options(caller.user_id, cid)
        client_tools = [ToolSpec.model_validate(t) for t in options.get("client_tools", [])]
    else:
        sent = messages_from_responses_input(body.input, None)
        if not sent or sent[-1].role != "user":
            raise InvalidRequest("The last input item must be a user message.", param="input")
        turn = _turn_input(body, client_tools, choice)

        latest = None if previous is None else still_latest(caller.user_id, previous)
        # A conversation named by the client is its chat from now on, listed; a chain of
        # responses leaves a background response's conversation unlisted.
        adopt = previous is None

        def start(keep: KeepStart | None) -> Awaitable[RunHandle]:
            return runs.send(
                caller, cid, sent[-1].content, turn, keep=keep, prepare=latest, adopt=adopt
            )

        kept_as = partial(_kept_run, cid)
        started = await run_once(db, caller.user_id, idempotency_key, start, kept_as)
    tools = (client_tools, choice)
    return await _answer(body, request, runs, db, stream, caller, held, cid, started, tools)


async def _background_turn(
    body: ResponsesRequest,
    request: Request,
    runs: Runs,
    db: Database,
    stream: StreamConfig,
    caller: Caller,
    held: frozenset[str],
    idempotency_key: RequestKey | None,
) -> Response:
    """`background: true` without a conversation: a new conversation holds the request
    and its turn is the response (`app.api.responses_background`). Under an
    Idempotency-Key a repeat answers the first one's response, in the conversation the
    first one made: no second conversation, no second run."""
    if answers_approvals(body.input):
        raise InvalidRequest(
            "A background response cannot answer approvals without its conversation.",
            param="input",
        )
    history = messages_from_responses_input(body.input, body.instructions)
    client_tools = tools_from_responses(body.tools)
    choice = tool_choice_from_responses(body.tool_choice)
    turn = _turn_input(body, client_tools, choice)
    held_in: list[str] = []  # the conversation this request made

    async def start(keep: KeepStart | None) -> RunHandle:
        cid, content = await hold_request(db, caller.user_id, history, body.model)
        held_in.append(cid)
        try:
            if content is None:  # the input ends with the client's tool outputs
                return await runs.continue_held(caller, cid, turn, keep=keep)
            return await runs.send(caller, cid, content, turn, keep=keep, adopt=False)
        except BaseException:
            await let_go(db, caller.user_id, cid)
            raise

    def kept_as(run_id: str, _: bool) -> Outcome:
        return Outcome(200, {"run_id": run_id, "conversation_id": held_in[-1]}, held_in[-1])

    started = await run_once(db, caller.user_id, idempotency_key, start, kept_as)
    cid = str(started.body["conversation_id"]) if isinstance(started, Outcome) else held_in[-1]
    tools = (client_tools, choice)
    return await _answer(body, request, runs, db, stream, caller, held, cid, started, tools)


async def _answer(
    body: ResponsesRequest,
    request: Request,
    runs: Runs,
    db: Database,
    stream: StreamConfig,
    caller: Caller,
    held: frozenset[str],
    cid: str,
    started: RunHandle | Outcome,
    tools: tuple[list[ToolSpec], ToolChoice | None],
) -> Response:
    """A conversation's response (`tools`: the client tools and tool choice it echoes):
    streamed (a hang-up does not stop the run), at once while it runs (`background`), or
    once it ended."""
    client_tools, choice = tools
    echo = _echo(body, client_tools, choice) | {"conversation": {"id": cid}}
    names = frozenset(t.name for t in client_tools)
    subs = body.client_tool_items == "submission_request"

    def wire_for(run_id: str, model: str, created_at: int | None = None) -> ResponsesWire:
        return ResponsesWire(run_id, model, names, echo, held, subs, created_at)

    streamed = wants_stream(request, body.stream)
    if isinstance(started, Outcome):  # a repeat: the first message's run
        run_id = run_id_of(started)
        assert run_id is not None  # a conversation's message always starts a run
        record = await stored_run(db, caller.user_id, response_id(run_id))
        wire = wire_for(record.id, record.model, int(record.created_at.timestamp()))
        events = runs.follow(caller.user_id, record.id, conversation_id=cid)
        if streamed:
            return sse_response(events, wire.encode, stream, farewell=wire.farewell)
        if body.background:
            return JSONResponse(await as_it_stands(runs, record, held))
        return JSONResponse(await wire.replayed(events))
    wire = wire_for(started.run_id, started.model_id)
    if streamed:
        return sse_response(started.events(0), wire.encode, stream, farewell=wire.farewell)
    if body.background:
        return JSONResponse(wire.started())
    await started.wait()
    return JSONResponse(await wire.answer(started))


def _kept_run(conversation_id: str, run_id: str, _: bool) -> Outcome:
    return Outcome(200, {"run_id": run_id}, conversation_id)


def _echo(
    body: ResponsesRequest, tools: list[ToolSpec], choice: ToolChoice | None
) -> dict[str, Any]:
    """What the Response object repeats from the request, in Responses shapes."""
    return {
        "instructions": body.instructions,
        "max_output_tokens": body.max_output_tokens,
        "metadata": body.metadata,
        "parallel_tool_calls": body.parallel_tool_calls is not False,
        "temperature": body.temperature,
        "background": True if body.background else None,
        "previous_response_id": body.previous_response_id,
    } | tool_echo(tools, choice)


class ResponsesWire:
    """Responses streaming events, or the final Response object they build."""

    def __init__(
        self,
        run_id: str,
        model: str,
        client_tools: frozenset[str],
        echo: dict[str, Any],
        held: frozenset[str],
        client_submissions: bool = False,
        created_at: int | None = None,
    ):
        self._run_id = run_id
        self._encoder = ResponsesEncoder(
            response_id=response_id(run_id),
            model=model,
            created_at=int(time.time()) if created_at is None else created_at,
            client_tools=client_tools,
            held_tools=held,
            client_submissions=client_submissions,
            request=echo,
        )

    def encode(self, batch: list[SequencedEvent]) -> bytes:
        return self._encoder.encode(batch)

    def farewell(self) -> bytes:
        return self._encoder.encode(interrupted_events(self._run_id))

    def started(self) -> dict[str, Any]:
        """The Response of a run that has just started: `in_progress`, no output yet."""
        return self._encoder.snapshot().model_dump(mode="json")

    async def answer(self, handle: RunHandle) -> dict[str, Any]:
        handle.result()  # the run's failure, raised
        # The answer is the encoder's final Response for the same events: identical to
        # what a stream of this run ends with, by construction.
        return await self.replayed(handle.events(0))

    async def replayed(self, batches: AsyncIterator[list[SequencedEvent]]) -> dict[str, Any]:
        """The final Response the run's events build, once the run ended (a failed run's
        says `failed`, with its error)."""
        async for batch in batches:
            self._encoder.encode(batch)
        if self._encoder.final is None:  # pragma: no cover - an ended run ends its log
            raise ChatBffError("The run ended without a response.")
        return self._encoder.final.model_dump(mode="json")


@router.post(
    "/responses",
    summary="OpenAI Responses API, stateless (stream and non-stream), or a conversation's "
    "turn, or in the background.",
    openapi_extra=idempotency.openapi(
        "Kept for a message to a `conversation`, a `previous_response_id` (a message or "
        "function call outputs) and a `background` response (each starts one run however "
        "often it is sent); a stateless request stores nothing and ignores the key."
    ),
    responses={
        200: {
            "model": ResponseObject,
            "description": "A Response object, or Responses streaming events as SSE.",
            "content": event_stream("ResponseStreamEvent"),
        }
    },
)
async def create_response(
    body: ResponsesRequest,
    request: Request,
    runs: RunsDep,
    stream: StreamDep,
    approvals: ApprovalsDep,
    tools: ToolCatalogDep,
    caller: CallerDep,
    db: DbDep,
    idempotency_key: IdempotencyDep,
) -> Response:
    refuse_unstored(body.background, body.store)
    held = tools.may_pause()
    turn_of = partial(_conversation_turn, body, request, runs, stream, caller, approvals, held, db)
    if body.previous_response_id is not None:
        previous = await resolve_previous(
            db,
            caller.user_id,
            body.previous_response_id,
            conversation=body.conversation,
            instructions=body.instructions,
        )
        return await turn_of(idempotency_key, previous.conversation_id, previous)
    if body.conversation is not None:
        return await turn_of(idempotency_key, _conversation_id(body.conversation))
    if body.background:
        return await _background_turn(
            body, request, runs, db, stream, caller, held, idempotency_key
        )
    history = messages_from_responses_input(body.input, body.instructions)
    if not any(m.role != "system" for m in history):
        raise InvalidRequest("input must not be empty.", param="input")
    client_tools = tools_from_responses(body.tools)
    choice = tool_choice_from_responses(body.tool_choice)
    turn = StatelessTurn(
        history=history,
        input=_turn_input(body, client_tools, choice),
        stream=body.stream,
        prepare=stateless_claims(approvals, caller),  # decide the approvals it answers
    )
    names = frozenset(t.name for t in client_tools)
    echo = _echo(body, client_tools, choice)
    subs = body.client_tool_items == "submission_request"
    return await run_turn(
        request,
        caller,
        runs,
        stream,
        turn,
        lambda handle: ResponsesWire(handle.run_id, handle.model_id, names, echo, held, subs),
    )
