"""`/api/agui`: AG-UI 1.0 over durable conversation runs.

Point an AG-UI client (`new HttpAgent({url: "/api/agui"})` of `@ag-ui/client`, or
CopilotKit's runtime) at `POST /api/agui`. The `threadId` is the durable conversation
(see `app.api.agui` for what a `RunAgentInput` becomes and what is trusted); the answer
is AG-UI events as SSE (see `app.api.encoders.agui`).

- A server tool that needs a human ends the run with `RUN_FINISHED` outcome `interrupt`;
  the next input's `resume` entries decide the approvals (or answer the tools'
  questions, reason `input_required`) and the run continues; a tool that asks again
  makes that input's stream a run that only interrupts with the new question.
- Client tools (the input's `tools`) end the run with `pendingToolCallIds`; the next
  input's tool messages carry their results and the run continues.
- `POST /api/agui/{threadId}/stop` cancels the thread's active run: its stream ends with
  `RUN_FINISHED` outcome `cancelled`. A client hanging up (`abortRun`) does not stop the
  run; it goes on and is stored.

A retry of an input that started a turn (same `threadId`, `runId` and input, say after
a dropped connection) starts no second turn: it replays the first run's events from
`RUN_STARTED`, live while the run goes on (a retry of client tool results likewise, while
the run they started goes on; once it ended, 404 as before); the same `runId` with
another input is another turn (`app.api.agui_retry`). A `resume` input whose run an
outage kept from starting continues the thread when sent again.

Refusals before the run starts are HTTP errors in the native shape (`HttpAgent` throws
them as `HTTP <status>: <body>`): 400 nothing to run, 404 a `conv_` thread or an interrupt
that is not the caller's, 409 a run already active or an interrupt already decided.
"""

from __future__ import annotations

from typing import Annotated, Any

from ag_ui.core import RunAgentInput
from fastapi import Path, Response

from app.api.agui import (
    answer_questions,
    check_questions,
    read_input,
    thread_snapshot,
    waiting_results,
)
from app.api.agui_retry import (
    collided_run,
    keeper,
    kept_run,
    results_keeper,
    run_key,
    sent_before,
    taken_call,
)
from app.api.deps import (
    ApprovalsDep,
    CallerDep,
    DbDep,
    IdempotencyTtlDep,
    RunsDep,
    StreamDep,
    SubmissionsDep,
)
from app.api.encoders.agui import AguiEncoder, farewell_frames
from app.api.encoders.agui_interrupts import asked_again_frames
from app.api.routing import api_router
from app.api.schemas.agui import AguiRunInput
from app.api.schemas.runs import RunState
from app.api.streaming import SSE_HEADERS, sse_response
from app.api.ui_chat import chat_conversation, decide_answers, stop_chat
from app.domain.errors import Conflict, NotFound
from app.runs.handle import RunHandle
from app.runs.requests import TurnInput
from app.store.idempotency import KeyTaken

router = api_router(prefix="/api/agui", tags=["ag-ui"])

RESTARTING = "This instance is restarting; the run goes on and is stored in the thread."
ThreadId = Annotated[str, Path(max_length=256, description="The AG-UI threadId.")]
_STREAM: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "AG-UI events as SSE (`data: {event}`), `RUN_STARTED` first and "
        "`RUN_FINISHED` or `RUN_ERROR` last.",
        "content": {"text/event-stream": {"schema": {"type": "string"}}},
    },
}


@router.post(
    "",
    response_class=Response,
    responses={
        **_STREAM,
        400: {"description": "Nothing to run, or a malformed resume entry."},
        404: {"description": "A `conv_` thread or an interrupt that is not yours."},
        409: {"description": "A run is active, or the interrupt was already decided."},
        422: {"description": "invalid_submission: an answer does not match the question."},
    },
    summary="Run the agent on an AG-UI thread (a RunAgentInput), streaming AG-UI events.",
)
async def run_agui(
    input_body: AguiRunInput,
    runs: RunsDep,
    db: DbDep,
    approvals: ApprovalsDep,
    submissions: SubmissionsDep,
    config: StreamDep,
    caller: CallerDep,
    ttl: IdempotencyTtlDep,
) -> Response:
    body = input_body.to_protocol()
    turn = read_input(body)
    conversation = await chat_conversation(db, caller, body.thread_id)
    cid = conversation.id
    key = run_key(caller.user_id, body, ttl)
    first = await kept_run(db, key)
    # A retry of an input that already started its run; of tool results, while it goes on.
    if first is not None and (turn.content or first == conversation.active_run_id):
        return await _again(runs, db, caller.user_id, cid, body, first, config, not turn.content)
    # The same decisions sent again: they may have committed before an outage kept the run
    # from starting; taken as this input asks, they are its own, not second ones.
    again = bool(turn.answers or turn.inputs) and await sent_before(db, key, cid)
    approval_ids = [a.approval_id for a in turn.answers]
    question_ids = [i.elicitation_id for i in turn.inputs]
    taken = await taken_call(db, caller.user_id, approval_ids, question_ids) if again else None
    questions = await check_questions(submissions, caller, cid, turn.inputs, again=again)
    decided = (
        await decide_answers(approvals, caller, cid, turn.answers, again=again)
        if turn.answers
        else []
    )
    answered = await answer_questions(submissions, caller, questions)
    asked = [p for p in answered if p.data.status == "waitingSubmission"]
    if asked and not turn.content and not turn.results:  # nothing can run until answered
        frames = asked_again_frames(body.thread_id, body.run_id, asked)
        return Response(frames, media_type="text/event-stream", headers=SSE_HEADERS)
    snapshot = None
    if turn.content:
        inputs = TurnInput(client_tools=turn.tools, model_id=turn.model)
        try:
            run = await runs.send(caller, cid, turn.content, inputs, keep=keeper(key, cid))
        except KeyTaken:  # a concurrent retry started the run first
            first = await collided_run(db, key)
            return await _again(runs, db, caller.user_id, cid, body, first, config)
        except Conflict as exc:  # ... or holds the thread with it
            first = await kept_run(db, key) if exc.code == "run_active" else None
            if first is None:
                raise
            return await _again(runs, db, caller.user_id, cid, body, first, config)
        snapshot = await thread_snapshot(db, caller.user_id, cid, body)
    elif turn.results:
        results = await waiting_results(db, caller.user_id, cid, turn.results)
        if not results and not decided:
            raise NotFound("No client tool call is waiting.", code="tool_call_not_found")
        try:
            resumed = (
                await runs.submit_tool_results(caller, cid, results, keep=results_keeper(key, cid))
                if results
                else await runs.resume(caller, cid, after_call=taken)
            )
        except KeyTaken:  # a concurrent send of the same results started the run first
            first = await collided_run(db, key)
            return await _again(runs, db, caller.user_id, cid, body, first, config, True)
        run = _continuing(resumed, None if results else taken, bool(turn.answers))
    else:
        resumed = await runs.resume(caller, cid, after_call=taken)
        run = _continuing(resumed, taken, bool(turn.answers))
    encoder = AguiEncoder(
        thread_id=body.thread_id,
        run_id=body.run_id,
        continues=not turn.content,
        settled=(*(d.part for d in decided), *answered),
        snapshot=snapshot,
    )
    return sse_response(
        run.events(0), encoder.encode, config, farewell=lambda: farewell_frames(RESTARTING)
    )


async def _again(
    runs: RunsDep,
    db: DbDep,
    owner_id: str,
    cid: str,
    body: RunAgentInput,
    run_id: str,
    config: StreamDep,
    continues: bool = False,
) -> Response:
    """The run a first send of this input started, its events from the start."""
    encoder = AguiEncoder(
        thread_id=body.thread_id,
        run_id=body.run_id,
        continues=continues,
        snapshot=await thread_snapshot(db, owner_id, cid, body),
    )
    return sse_response(
        runs.follow(owner_id, run_id, conversation_id=cid, after=0),
        encoder.encode,
        config,
        farewell=lambda: farewell_frames(RESTARTING),
    )


def _continuing(
    run: RunHandle | None, taken: str | None = None, approvals: bool = False
) -> RunHandle:
    """`taken`: every entry of the input was decided or answered already (it was sent
    again); no run means the thread went on already, and the input is refused as a
    second decision (or answer) is."""
    if run is None and taken is not None:
        if approvals:
            raise Conflict("This approval was already decided.", code="already_decided")
        raise Conflict("This question was already answered.", code="already_answered")
    if run is None:
        raise Conflict(
            "Other calls of this run still wait for an answer (tool results or "
            "interrupts); send them too.",
            code="tool_calls_waiting",
        )
    return run


@router.post(
    "/{thread_id}/stop",
    response_model=RunState,
    responses={
        204: {"description": "No run of this thread is active."},
        404: {"description": "No such thread (or not yours)."},
    },
    summary="Stop the thread's active run; its stream ends with outcome `cancelled`.",
)
async def stop_agui(
    thread_id: ThreadId, runs: RunsDep, db: DbDep, caller: CallerDep
) -> RunState | Response:
    return await stop_chat(runs, db, caller, thread_id)
