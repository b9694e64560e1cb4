"""Approvals of `confirm` tools: the caller's inbox and the decision.

`POST /api/approvals/{approval_id}` is the only way a `confirm` tool runs. Refusals:
404 `approval_not_found` (unknown or another user's), 409 `already_decided` (another
decision than the one taken), 409 `approval_expired`, 409 `approval_args_mismatch`,
422 `invalid_arguments` (edited arguments; the approval stays pending). After the
decision, when no tool call of the assistant message still waits, the conversation
continues in a new run (`run_id`).

A second decision is 409 `already_decided` and never runs the tool again, but a decision is
safe to retry: the 409 names the decision taken (`decision`) and, when it is the one sent
again, the run that continues the conversation (`run_id`, `events_url`), continuing it if
that has not happened yet. So an outage after the decision committed is answered as it is,
503 `database_unavailable` (retryable), rather than a 200 whose conversation never goes on,
and so is a limit that refuses the continuing run: 429 `rate_limited` (`limit`) or
`budget_exceeded`, with `Retry-After`.
The run named is the one continuing the call, never merely the one active: when the
conversation went on with a new user message instead (after such an outage), no run
continues the call, and the 409 says so with `moved_on: true` and no `run_id`.
"""

from __future__ import annotations

from datetime import UTC, datetime

from app.api.deps import ApprovalsDep, CallerDep, RunsDep, ToolCatalogDep
from app.api.routing import api_router
from app.api.schemas.approvals import ApprovalList, ApprovalOut, DecisionIn, DecisionOut
from app.domain.errors import Conflict
from app.runs.continuing import continuing_run
from app.store.repos.approvals import ApprovalRecord
from app.tools.catalog import ToolCatalog

router = api_router(prefix="/api/approvals", tags=["approvals"])


def _out(record: ApprovalRecord, tools: ToolCatalog) -> ApprovalOut:
    status = record.status
    if status == "pending" and record.expires_at <= datetime.now(UTC):
        status = "expired"
    return ApprovalOut(
        id=record.id,
        conversation_id=record.conversation_id,
        run_id=record.run_id,
        tool_call_id=record.tool_call_id,
        tool_name=record.tool_name,
        args=tools.shown_args(record.tool_name, record.args),
        summary=record.summary,
        status=status,
        created_at=record.created_at,
        expires_at=record.expires_at,
        decided_at=record.decided_at,
        reason=record.reason,
        outcome=record.outcome_status,
    )


@router.get("", response_model=ApprovalList, summary="Your pending approvals, everywhere.")
async def inbox(approvals: ApprovalsDep, tools: ToolCatalogDep, caller: CallerDep) -> ApprovalList:
    return ApprovalList(data=[_out(r, tools) for r in await approvals.inbox(caller)])


@router.get("/{approval_id}", response_model=ApprovalOut, summary="One approval.")
async def get_approval(
    approval_id: str, approvals: ApprovalsDep, tools: ToolCatalogDep, caller: CallerDep
) -> ApprovalOut:
    return _out(await approvals.get(caller, approval_id), tools)


@router.post(
    "/{approval_id}",
    response_model=DecisionOut,
    summary="Approve or reject a pending tool call.",
    responses={
        404: {"description": "No such approval (or not yours)."},
        409: {
            "description": "already_decided (naming the `decision` taken and, when it is "
            "the one sent again, the continuing run's `run_id` and `events_url`, or "
            "`moved_on: true` when a new message went on instead), "
            "approval_expired or approval_args_mismatch."
        },
        429: {
            "description": "A limit refused the run continuing the conversation; the "
            "decision stands: send it again after `Retry-After`."
        },
        503: {"description": "Retry the same decision: it may have been taken already."},
        422: {"description": "Edited arguments are invalid; the approval stays pending."},
    },
)
async def decide(
    approval_id: str,
    body: DecisionIn,
    approvals: ApprovalsDep,
    tools: ToolCatalogDep,
    runs: RunsDep,
    caller: CallerDep,
) -> DecisionOut:
    result = await approvals.decide(
        caller, approval_id, body.decision, args=body.args, reason=body.reason, replay=True
    )
    conversation_id = result.approval.conversation_id
    run_id = result.continued_by
    if conversation_id is not None:
        run_id = await continuing_run(
            runs, caller, conversation_id, result.approval.tool_call_id, result
        )
    events_url = f"/api/conversations/{conversation_id}/runs/{run_id}/events" if run_id else None
    if result.replayed:
        raise Conflict(
            "This approval was already decided.",
            code="already_decided",
            decision=result.approval.status,
            run_id=run_id,
            events_url=events_url,
            moved_on=result.moved_on,
        )
    return DecisionOut(
        approval=_out(result.approval, tools),
        part=result.part,
        run_id=run_id,
        events_url=events_url,
    )
