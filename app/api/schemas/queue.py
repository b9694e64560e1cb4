"""Bodies of the review queue: what waits for the caller, and the events of its feed."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field, TypeAdapter


class QueueItemOut(BaseModel):
    """An approval or a proposal waiting for (or just decided by) the caller."""

    type: Literal["approval", "proposal"] = Field(description="What kind of item.")
    id: str = Field(description="The approval's or proposal's id.")
    conversation_id: str | None = Field(description="Conversation it belongs to.")
    tool_name: str = Field(description="Tool the call is for.")
    summary: str = Field(description="Human-readable summary of the call.")
    status: str = Field(
        description="pending, approved, rejected, cancelled, expired, applied or undone."
    )
    created_at: datetime = Field(description="When it was asked for or proposed.")
    expires_at: datetime | None = Field(default=None, description="Approvals: when it expires.")


class PendingOut(BaseModel):
    """How many items wait: the badge."""

    approvals: int = Field(description="Undecided, unexpired approvals.")
    proposals: int = Field(description="Queued proposals, across conversations.")
    total: int = Field(description="Both together.")


class QueueOut(BaseModel):
    """The caller's review queue on load; follow `/api/queue/events?after=cursor` from here."""

    cursor: int = Field(description="The last feed event this state includes.")
    pending: PendingOut = Field(description="The counts.")
    items: list[QueueItemOut] = Field(
        description="Pending approvals, then proposals, oldest first."
    )


class QueueEventOut(BaseModel):
    """One event of the review queue feed. On the wire: `id:` (the caller's feed sequence
    number; send it back as Last-Event-ID), `event:` (`type`), `data:` (this object)."""

    type: Literal["count", "added", "decided", "expired", "applied", "undone"] = Field(
        description="`count`: the counts now (first frame of a fresh stream); the others "
        "say what happened to `item`."
    )
    seq: int = Field(description="Feed sequence number (also the frame's `id:`).")
    item: QueueItemOut | None = Field(default=None, description="The item that changed.")
    pending: PendingOut = Field(description="The counts after this change.")


QUEUE_EVENT_ADAPTER: TypeAdapter[QueueEventOut] = TypeAdapter(QueueEventOut)
