"""Answers to questions server tools ask mid-call (MCP elicitations).

`POST /api/conversations/{conversation_id}/submissions/{tool_call_id}` answers the
question in the waiting part's `data.elicitation`; the tool is called again with the
answer (on whichever instance receives it: the question and the tool's state are in the
database). Refusals: 404 `submission_not_found`, 409 `already_answered` (a second
answer; a stopped run), 409 `submission_not_ready` (retryable), 409
`tool_unavailable`, 422 `invalid_submission` (`problems` names each mismatch with
`requestedSchema`; the question stays open).

A tool may ask again after an answer (the part then waits with a new
`data.elicitation.id`). An answer that names its question (`elicitation_id`) answers that
question only: sent again once the tool asked its next one, it is 409 `already_answered`
naming the question it answered (`elicitation_id`), never an answer to the next.

A second answer is 409 `already_answered` and never calls the tool again, but an answer is
safe to retry, as a decision is: the 409 names the action taken (`action`) and, when the
answer sent again is the one given, the run that continues the conversation (`run_id`,
`events_url`), continuing it if that has not happened yet. So an outage after the answer
committed is answered as it is, 503 `database_unavailable` (retryable), rather than a 200
whose conversation never goes on, and so is a limit that refuses the continuing run (429
`rate_limited` or `budget_exceeded`, with `Retry-After`). As for a decision, the run named
continues the call; `moved_on: true` (and no `run_id`) says a new user message went on
instead.
"""

from __future__ import annotations

from app.api.deps import CallerDep, RunsDep, SubmissionsDep
from app.api.routing import api_router
from app.api.schemas.submissions import SubmissionIn, SubmissionOut
from app.domain.errors import Conflict
from app.runs.continuing import continuing_run

router = api_router(prefix="/api/conversations", tags=["approvals"])


@router.post(
    "/{conversation_id}/submissions/{tool_call_id}",
    response_model=SubmissionOut,
    summary="Answer the question a server tool asked mid-call; the call and the run go on.",
    responses={
        404: {"description": "No question of this call (or not yours)."},
        409: {
            "description": "already_answered (naming the `action` taken, the question "
            "answered (`elicitation_id`) and, when it is the answer sent again, the "
            "continuing run's `run_id` and `events_url`, or `moved_on: true` when a new "
            "message went on instead), "
            "submission_not_ready or tool_unavailable."
        },
        429: {
            "description": "A limit refused the run continuing the conversation; the "
            "answer stands: send it again after `Retry-After`."
        },
        503: {"description": "Retry the same answer: it may have been given already."},
        422: {"description": "invalid_submission: the answer does not match the schema."},
    },
)
async def answer_submission(
    conversation_id: str,
    tool_call_id: str,
    body: SubmissionIn,
    submissions: SubmissionsDep,
    runs: RunsDep,
    caller: CallerDep,
) -> SubmissionOut:
    result = await submissions.answer(
        caller,
        conversation_id,
        tool_call_id,
        body.action,
        body.content,
        elicitation_id=body.elicitation_id,
    )
    run_id = await continuing_run(runs, caller, conversation_id, tool_call_id, result)
    events_url = f"/api/conversations/{conversation_id}/runs/{run_id}/events" if run_id else None
    if result.replayed is not None:
        raise Conflict(
            "This question was already answered.",
            code="already_answered",
            action=result.replayed,
            elicitation_id=result.elicitation_id,
            run_id=run_id,
            events_url=events_url,
            moved_on=result.moved_on,
        )
    return SubmissionOut(part=result.part, run_id=run_id, events_url=events_url)
