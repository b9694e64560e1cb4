"""A conversation's proposal queue: list it, approve it (atomically), reject some or all,
undo the last applied batch.

`POST .../proposals/approve` applies the queue in call order in ONE transaction; a failing
proposal rolls every change back, keeps the queue and answers 409 `proposal_failed` with
`proposal_id` and `reason`; one that finds nothing pending (the loser of two approves
sent at once: on SQLite it reads the queue only after the winner committed) answers 409
`proposals_changed`, as the loser does on Postgres, never 200 with nothing applied; a
reject that finds nothing pending likewise.
`POST .../proposals/undo` takes the last applied batch back
in ONE transaction if nothing it touched changed since (else 409 `undo_conflict` naming
the `entity` and the `proposal_id`).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Body

from app.api.deps import CallerDep, ProposalsDep, ToolCatalogDep, UndoDep
from app.api.routing import api_router
from app.api.schemas.proposals import (
    AppliedOut,
    BatchList,
    BatchOut,
    ProposalIds,
    ProposalList,
    ProposalOut,
    RejectedOut,
    UndoIn,
    UndoOut,
)
from app.api.undo_answers import UNDO_RESPONSES, batch_list, undo_out
from app.domain.errors import Conflict
from app.store.repos.proposals import ProposalRecord
from app.tools.catalog import ToolCatalog

router = api_router(prefix="/api/conversations", tags=["proposals"])


def _out(record: ProposalRecord, tools: ToolCatalog) -> ProposalOut:
    return ProposalOut(
        id=record.id,
        tool_name=record.tool_name,
        args=tools.shown_args(record.tool_name, record.args),
        summary=record.summary,
        provisional_id=record.provisional_id,
        run_id=record.run_id,
        tool_call_id=record.tool_call_id,
        model=record.model_id,
        created_at=record.created_at,
    )


def _nothing_pending() -> Conflict:
    """What an approve or a reject that found nothing pending answers, on SQLite as on
    Postgres: the loser of two sent at once reads the queue after the winner committed on
    SQLite (one connection), before it on Postgres; a 200 that did nothing reads as done."""
    return Conflict("No proposal is pending any more; reload the queue.", code="proposals_changed")


IdsBody = Annotated[ProposalIds | None, Body(description="Which proposals; all when absent.")]


@router.get(
    "/{conversation_id}/proposals",
    response_model=ProposalList,
    summary="The conversation's pending proposals.",
)
async def list_proposals(
    conversation_id: str, proposals: ProposalsDep, tools: ToolCatalogDep, caller: CallerDep
) -> ProposalList:
    queue = await proposals.queue(caller, conversation_id)
    return ProposalList(data=[_out(p, tools) for p in queue])


@router.post(
    "/{conversation_id}/proposals/approve",
    response_model=BatchOut,
    summary="Apply the queue (or the given ids) in one transaction.",
    responses={
        409: {
            "description": "proposal_failed: nothing applied, queue kept; proposals_changed: "
            "nothing was pending any more (another approve or reject settled it); reload it."
        }
    },
)
async def approve_proposals(
    conversation_id: str, proposals: ProposalsDep, caller: CallerDep, body: IdsBody = None
) -> BatchOut:
    ids = body.ids if body is not None else None
    batch = await proposals.approve(caller, conversation_id, ids)
    if not batch.applied:  # another approve or reject settled the queue first, or it was empty
        raise _nothing_pending()
    return BatchOut(
        batch_id=batch.batch_id,
        audit_id=batch.audit_id,
        applied=[
            AppliedOut(
                proposal_id=c.proposal_id,
                tool_name=c.tool_name,
                args=c.args,
                result=c.result,
                provisional_id=c.provisional_id,
                real_id=c.real_id,
            )
            for c in batch.applied
        ],
    )


@router.post(
    "/{conversation_id}/proposals/reject",
    response_model=RejectedOut,
    summary="Drop all pending proposals, or the given ids.",
    responses={
        409: {
            "description": "proposals_changed: nothing was pending any more, or the queue "
            "changed meanwhile; reload it."
        }
    },
)
async def reject_proposals(
    conversation_id: str, proposals: ProposalsDep, caller: CallerDep, body: IdsBody = None
) -> RejectedOut:
    ids = body.ids if body is not None else None
    rejected = await proposals.reject(caller, conversation_id, ids)
    if not rejected:  # another reject or approve settled the queue first, or it was empty
        raise _nothing_pending()
    return RejectedOut(rejected=rejected)


@router.post(
    "/{conversation_id}/proposals/undo",
    response_model=UndoOut,
    summary="Undo the last applied batch in one transaction, if nothing it touched changed.",
    responses=UNDO_RESPONSES,
)
async def undo_proposal_batch(
    conversation_id: str,
    undo: UndoDep,
    caller: CallerDep,
    body: Annotated[UndoIn | None, Body(description="Which batch; the last when absent.")] = None,
) -> UndoOut:
    batch_id = body.batch_id if body is not None else None
    return undo_out(await undo.undo(caller, conversation_id, batch_id))


@router.get(
    "/{conversation_id}/proposals/batches",
    response_model=BatchList,
    summary="The conversation's applied batches, newest first, applied or undone.",
)
async def list_proposal_batches(
    conversation_id: str, undo: UndoDep, caller: CallerDep
) -> BatchList:
    return batch_list(await undo.history(caller, conversation_id))
