"""A conversation's proposal queue: list it, approve it (atomically), reject some or all.

`POST .../proposals/approve` applies the queue in call order in ONE transaction; a failing
proposal rolls every change back, keeps the queue and answers 409 `proposal_failed` with
`proposal_id` and `reason`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from fastapi import Body
from pydantic import BaseModel, ConfigDict, Field

from app.api.deps import CallerDep, ProposalsDep, ToolCatalogDep
from app.api.routing import api_router
from app.store.repos.proposals import ProposalRecord
from app.tools.catalog import ToolCatalog

router = api_router(prefix="/api/conversations", tags=["proposals"])


class ProposalOut(BaseModel):
    """A change the model proposed; nothing is applied until a human approves."""

    id: str = Field(description="Proposal id.")
    tool_name: str = Field(description="Tool the model proposed to call.")
    args: dict[str, Any] = Field(description="Arguments it will run with.")
    summary: str = Field(description="Human-readable summary of the change.")
    provisional_id: str | None = Field(
        description="Provisional id handed to the model for what this creates."
    )
    run_id: str = Field(description="Run that proposed it.")
    tool_call_id: str = Field(description="The tool part's id (toolCallId).")
    model: str = Field(description="Model that proposed it.")
    created_at: datetime = Field(description="When it was proposed.")


class ProposalList(BaseModel):
    """A conversation's queue of proposed changes awaiting a human."""

    data: list[ProposalOut] = Field(description="Pending proposals in the order they apply.")


class ProposalIds(BaseModel):
    """Which queued proposals to act on; all when absent."""

    model_config = ConfigDict(extra="forbid")

    ids: list[str] | None = Field(
        default=None, max_length=500, description="Only these proposals; all when absent."
    )


class AppliedOut(BaseModel):
    """One applied proposal, so a UI can show what changed and map provisional ids."""

    proposal_id: str = Field(description="The proposal applied.")
    tool_name: str = Field(description="Tool that ran.")
    args: dict[str, Any] = Field(description="Arguments it ran with (provisional ids resolved).")
    result: Any = Field(description="The tool's result.")
    provisional_id: str | None = Field(description="Provisional id this proposal handed out.")
    real_id: str | None = Field(description="The real id the provisional id stands for.")


class BatchOut(BaseModel):
    """A proposal queue applied as one transaction, with its audit record."""

    batch_id: str | None = Field(description="Id of the applied batch; null if nothing queued.")
    audit_id: str | None = Field(description="The audit record written for the batch.")
    applied: list[AppliedOut] = Field(description="What changed, in order.")


class RejectedOut(BaseModel):
    """Which proposals were dropped from the queue."""

    rejected: list[str] = Field(description="Ids of the proposals dropped.")


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
    responses={409: {"description": "proposal_failed: nothing applied, queue kept."}},
)
async def approve_proposals(
    conversation_id: str, proposals: ProposalsDep, caller: CallerDep, body: IdsBody = None
) -> BatchOut:
    ids = body.ids if body is not None else None
    batch = await proposals.approve(caller, conversation_id, ids)
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
)
async def reject_proposals(
    conversation_id: str, proposals: ProposalsDep, caller: CallerDep, body: IdsBody = None
) -> RejectedOut:
    ids = body.ids if body is not None else None
    return RejectedOut(rejected=await proposals.reject(caller, conversation_id, ids))
