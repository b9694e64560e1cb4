"""Bodies of the approvals API: the inbox, one approval, a decision and its outcome."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from app.domain.parts import ToolPart


class ApprovalOut(BaseModel):
    """A `confirm` tool call waiting for (or past) a human decision."""

    id: str = Field(description="Approval id.")
    conversation_id: str | None = Field(description="Conversation of the tool call.")
    run_id: str = Field(description="Run that asked for the approval.")
    tool_call_id: str = Field(description="The tool part's id (toolCallId).")
    tool_name: str = Field(description="Tool to run.")
    args: dict[str, Any] = Field(description="Arguments it will run with.")
    summary: str = Field(description="Human-readable summary of what will happen.")
    status: Literal["pending", "approved", "rejected", "expired", "cancelled"] = Field(
        description="`pending` until decided; `expired` past `expires_at`; `cancelled` when "
        "its run was cancelled."
    )
    created_at: datetime = Field(description="When approval was asked.")
    expires_at: datetime = Field(description="After this it can no longer be approved.")
    decided_at: datetime | None = Field(description="When it was decided.")
    reason: str | None = Field(description="The reason given with the decision.")
    outcome: Literal["success", "error", "background"] | None = Field(
        description="How the tool call ended once decided; `background`: a long-running "
        "tool, running on as a background job (its card names the job)."
    )


class ApprovalList(BaseModel):
    """A caller's inbox of tool calls waiting for a human, across conversations."""

    data: list[ApprovalOut] = Field(description="Pending approvals, oldest first.")


class DecisionIn(BaseModel):
    """A human's decision on a pending tool call; the only way a `confirm` tool runs."""

    model_config = ConfigDict(extra="forbid")

    decision: Literal["approve", "reject"] = Field(description="Run the tool, or refuse it.")
    args: dict[str, Any] | None = Field(
        default=None, description="Edited arguments (approve only); validated again."
    )
    reason: str | None = Field(
        default=None, max_length=2000, description="Why; a rejection passes it to the model."
    )


class DecisionOut(BaseModel):
    """The decided approval, the updated tool part and the run that continues."""

    approval: ApprovalOut = Field(description="The approval, decided.")
    part: ToolPart | None = Field(description="The updated tool part, upsert it by id.")
    run_id: str | None = Field(description="The run continuing the conversation, if one did.")
    events_url: str | None = Field(description="Where to follow that run.")
