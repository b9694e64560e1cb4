"""Answers to questions server tools ask mid-call (MCP elicitations).

`POST /api/conversations/{conversation_id}/submissions/{tool_call_id}` answers the
question in the waiting part's `data.elicitation`; the tool is called again with the
answer (on whichever instance receives it: the question and the tool's state are in the
database). Refusals: 404 `submission_not_found`, 409 `already_answered`,
409 `submission_not_ready` (retryable), 409 `tool_unavailable`, 422 `invalid_submission`
(`problems` names each mismatch with `requestedSchema`; the question stays open).
"""

from __future__ import annotations

import logging

from app.api.deps import CallerDep, RunsDep, SubmissionsDep
from app.api.routes.approvals import resume_conversation
from app.api.routing import api_router
from app.api.schemas.submissions import SubmissionIn, SubmissionOut
from app.domain.errors import Unavailable

router = api_router(prefix="/api/conversations", tags=["approvals"])
log = logging.getLogger("chat_bff.submissions")


@router.post(
    "/{conversation_id}/submissions/{tool_call_id}",
    response_model=SubmissionOut,
    summary="Answer the question a server tool asked mid-call; the call and the run go on.",
    responses={
        404: {"description": "No question of this call (or not yours)."},
        409: {"description": "already_answered, submission_not_ready or tool_unavailable."},
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
        caller, conversation_id, tool_call_id, body.action, body.content
    )
    run_id = None
    if result.ready_to_resume:
        try:
            run_id = await resume_conversation(runs, caller, conversation_id)
        except Unavailable:
            # An answer is not safe to send again yet (409 `already_answered`): a 503 here
            # would strand the client, so the answer stands and the run waits.
            log.warning("could not resume after an answer: the database is out of reach")
    return SubmissionOut(
        part=result.part,
        run_id=run_id,
        events_url=(
            f"/api/conversations/{conversation_id}/runs/{run_id}/events" if run_id else None
        ),
    )
