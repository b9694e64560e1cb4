"""`/api/ui/chat`: the Vercel AI SDK UI message stream over durable conversation runs.

Point `useChat` (or `new DefaultChatTransport({api})` with `readUIMessageStream`) at
`/api/ui/chat?v=<major>` where `<major>` is the client's `ai` major version: `5` (the
default), `6` or `7`. The transport keeps the query string on its resume URL, so
`GET /api/ui/chat/{chatId}/stream?v=<major>` gets the same dialect. The major decides what
the stream may contain (see `app.api.encoders.vercel`): v5 gets no approval chunks (a
pending approval is a `data-approval` part, decided through `/api/approvals/{id}`), v6
and v7 get `tool-approval-request` and answer it with the approval response in the next
request.

- `POST /api/ui/chat`: the chat id maps to a durable conversation of the caller (created
  on first use); the last message is a user turn, approval responses (v6/v7), or
  `trigger: "regenerate-message"`. The run is a durable run; the answer streams it.
- `GET /api/ui/chat/{chatId}/stream`: the conversation's active run, replayed from its
  start and then followed live; 204 when no run is active (the client then does nothing).
- `POST /api/ui/chat/{chatId}/stop`: cancels the active run (partial text kept); every
  stream of it ends with `abort`. A client hanging up does not stop the run.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import partial
from typing import Annotated, Any, Literal

from fastapi import Path, Query, Response, status

from app.api import idempotency
from app.api.deps import (
    ApprovalsDep,
    CallerDep,
    DbDep,
    IdempotencyDep,
    RunsDep,
    StreamDep,
    StreamSlot,
)
from app.api.encoders.vercel import ClientMajor, VercelEncoder
from app.api.event_streams import event_stream
from app.api.idempotent_turns import run_id_of, run_once
from app.api.routing import api_router
from app.api.schemas.runs import RunState
from app.api.schemas.ui_chat import UIChatRequest, approval_answers, user_content
from app.api.ui_chat import (
    chat_conversation,
    decide_answers,
    existing_conversation,
    stop_chat,
    ui_stream,
)
from app.domain.errors import Conflict, InvalidRequest
from app.domain.identity import Caller
from app.runs.handle import RunHandle
from app.runs.requests import TurnInput
from app.runs.turns import KeepStart, Runs
from app.store.idempotency import Outcome

router = api_router(prefix="/api/ui/chat", tags=["vercel-ai-sdk"])

Major = Annotated[
    Literal["5", "6", "7"],
    Query(
        alias="v",
        description="The client's `ai` major version: what chunks the stream may hold.",
    ),
]
MAJORS: dict[str, ClientMajor] = {"5": 5, "6": 6, "7": 7}
ChatId = Annotated[str, Path(max_length=256, description="The chat id `useChat` sent.")]
_STREAM: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "UI message stream (`data: {chunk}` ... `data: [DONE]`), header "
        "`x-vercel-ai-ui-message-stream: v1`.",
        "content": event_stream("UIMessageChunk"),
    },
}


@router.post(
    "",
    response_class=Response,
    responses={
        **_STREAM,
        404: {"description": "A `conv_` chat id or an approval that is not yours."},
        409: {"description": "A run is active, or the approval was already decided."},
    },
    summary="Send a useChat turn (user message, approval responses or regenerate).",
    openapi_extra=idempotency.openapi(
        "Kept for a user message and a regenerate: a repeat streams the first one's run "
        "from its start. Approval responses are decided once and refused when sent again."
    ),
)
async def ui_chat(
    body: UIChatRequest,
    runs: RunsDep,
    db: DbDep,
    approvals: ApprovalsDep,
    config: StreamDep,
    caller: CallerDep,
    idempotency_key: IdempotencyDep,
    v: Major = "5",
) -> Response:
    conversation = await chat_conversation(db, caller, body.id)
    # Only v7 can take back a failed call's parts (`reset-step`).
    turn = TurnInput(client_tools=[], model_id=body.model, retractable=MAJORS[v] >= 7)
    start = _starter(body, runs, caller, conversation.id, turn)
    if start is not None:
        kept_as = partial(_kept_run, conversation.id)
        started = await run_once(db, caller.user_id, idempotency_key, start, kept_as)
        if isinstance(started, Outcome):  # a repeat: the first request's run, from its start
            run_id = str(run_id_of(started))
            batches = runs.follow(caller.user_id, run_id, conversation_id=conversation.id)
        else:
            batches = started.events(0)
        return ui_stream(batches, VercelEncoder(major=MAJORS[v]), config)
    last = body.last()
    assert last is not None  # the request model requires it for submit-message
    answers = approval_answers(last) if last.role == "assistant" else []
    if not answers:
        raise InvalidRequest(
            "The last message must be a user message or carry approval responses.",
            param="messages",
        )
    decided = await decide_answers(approvals, caller, conversation.id, answers)
    resumed = await runs.resume(caller, conversation.id)
    if resumed is None:
        raise Conflict(
            "Other tool calls of this message still wait for an answer.",
            code="tool_calls_waiting",
        )
    encoder = VercelEncoder(major=MAJORS[v], continues=True, decided=tuple(decided))
    return ui_stream(resumed.events(0), encoder, config)


def _starter(
    body: UIChatRequest, runs: Runs, caller: Caller, conversation_id: str, turn: TurnInput
) -> Callable[[KeepStart | None], Awaitable[RunHandle]] | None:
    """What starts the request's run: a regenerate, or an answer to the user's message;
    None when the last message carries approval responses instead."""
    last = body.last()
    if body.trigger == "regenerate-message":

        def regenerate(keep: KeepStart | None) -> Awaitable[RunHandle]:
            return runs.regenerate(caller, conversation_id, turn, keep=keep)

        return regenerate
    assert last is not None  # the request model requires it for submit-message
    if last.role != "user":
        return None
    content = user_content(last)

    def send(keep: KeepStart | None) -> Awaitable[RunHandle]:
        return runs.send(caller, conversation_id, content, turn, keep=keep)

    return send


def _kept_run(conversation_id: str, run_id: str, _: bool) -> Outcome:
    return Outcome(200, {"run_id": run_id, "conversation_id": conversation_id}, conversation_id)


@router.get(
    "/{chat_id}/stream",
    dependencies=[StreamSlot],
    response_class=Response,
    responses={**_STREAM, 204: {"description": "No run of this chat is active."}},
    summary="Resume: replay the chat's active run from its start and follow it.",
)
async def resume_ui_chat(
    chat_id: ChatId, runs: RunsDep, db: DbDep, config: StreamDep, caller: CallerDep, v: Major = "5"
) -> Response:
    conversation = await existing_conversation(db, caller, chat_id)
    if conversation is None or conversation.active_run_id is None:
        return Response(status_code=status.HTTP_204_NO_CONTENT)
    run_id, conversation_id = conversation.active_run_id, conversation.id
    batches = runs.follow(caller.user_id, run_id, conversation_id=conversation_id)
    return ui_stream(batches, VercelEncoder(major=MAJORS[v]), config)


@router.post(
    "/{chat_id}/stop",
    response_model=RunState,
    responses={
        204: {"description": "No run of this chat is active."},
        404: {"description": "No such chat (or not yours)."},
    },
    summary="Stop the chat's active run; its streams end with `abort`.",
)
async def stop_ui_chat(
    chat_id: ChatId, runs: RunsDep, db: DbDep, caller: CallerDep
) -> RunState | Response:
    return await stop_chat(runs, db, caller, chat_id)
