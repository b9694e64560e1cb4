"""Bodies of a conversation's proposal queue: list, approve (atomically), reject, undo."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator


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
    """Which queued proposals to act on; all when absent. An empty or repeating list is
    a 422 `validation_error`: `[]` acting on nothing would answer 200 to a client that
    meant something else (and `null` or no body already means all)."""

    model_config = ConfigDict(extra="forbid")

    ids: list[Annotated[str, Field(min_length=1, max_length=64)]] | None = Field(
        default=None,
        min_length=1,
        max_length=500,
        description="Only these proposals, each named once; all when absent.",
        json_schema_extra={"uniqueItems": True},
    )

    @field_validator("ids")
    @classmethod
    def _each_once(cls, ids: list[str] | None) -> list[str] | None:
        if ids is not None and len(set(ids)) != len(ids):
            raise ValueError("names a proposal more than once")
        return ids


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


class UndoIn(BaseModel):
    """Which batch to undo: the conversation's last applied one; naming it guards
    against undoing a batch someone else applied meanwhile."""

    model_config = ConfigDict(extra="forbid")

    batch_id: str | None = Field(
        default=None, max_length=64, description="Must be the last applied batch; any when absent."
    )


class UndoneOut(BaseModel):
    """One proposal taken back."""

    proposal_id: str = Field(description="The proposal undone (its status is now `undone`).")
    tool_name: str = Field(description="Tool whose effect was reverted.")
    entities: list[str] = Field(description="What it had touched, e.g. `node node_1`.")


class UndoOut(BaseModel):
    """A batch undone as one transaction, with its audit record."""

    batch_id: str = Field(description="The batch undone.")
    audit_id: str = Field(description="The audit record written for the undo.")
    undone: list[UndoneOut] = Field(description="What was taken back, in apply order.")


class BatchProposalOut(BaseModel):
    """A proposal as its batch applied it."""

    id: str = Field(description="Proposal id.")
    tool_name: str = Field(description="Tool it ran.")
    summary: str = Field(description="Human-readable summary of the change.")
    status: str = Field(description="`applied`, or `undone` once its batch was undone.")


class BatchSummaryOut(BaseModel):
    """An applied batch: what it changed and whether it was undone."""

    batch_id: str = Field(description="Batch id.")
    status: str = Field(description="`applied` or `undone`.")
    approved_by: str = Field(description="Who approved it.")
    audit_id: str = Field(description="The audit record of the apply.")
    created_at: datetime = Field(description="When it was applied.")
    proposals: list[BatchProposalOut] = Field(description="Its proposals, in apply order.")


class BatchList(BaseModel):
    """A conversation's applied batches, newest first; the first `applied` one is what
    `POST .../proposals/undo` takes back."""

    data: list[BatchSummaryOut] = Field(description="Newest first (at most 20).")
