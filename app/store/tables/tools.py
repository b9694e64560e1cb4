"""Tables of the tool runtime: approvals, proposals and their batches.

Rows never leave `app.store`: `app.store.repos.approvals` and `app.store.repos.proposals`
turn them into records. Migration `0002_tools` creates exactly these tables.

- `tool_approvals`: one pending (then decided) approval per confirm-tool call, bound to
  its owner, conversation, run, tool call id and the sha256 of its canonical arguments.
- `tool_proposals`: the propose-then-approve queue of a conversation, in call order.
- `tool_proposal_batches`: one row per applied batch, linked to its audit entry.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, ForeignKey, Index, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from app.store.db import Base
from app.store.tables.types import JSONType, UTCDateTime


class ApprovalRow(Base):
    __tablename__ = "tool_approvals"
    __table_args__ = (
        UniqueConstraint("run_id", "tool_call_id", name="uq_tool_approvals_run_call"),
        Index("ix_tool_approvals_owner_status", "owner_id", "status", "created_at"),
    )

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    owner_id: Mapped[str] = mapped_column(String(255))
    conversation_id: Mapped[str | None] = mapped_column(
        String(64), ForeignKey("conversations.id", ondelete="CASCADE"), index=True
    )
    run_id: Mapped[str] = mapped_column(String(64))
    tool_call_id: Mapped[str] = mapped_column(String(128))
    tool_name: Mapped[str] = mapped_column(String(64))
    args: Mapped[dict[str, Any]] = mapped_column(JSONType)
    args_hash: Mapped[str] = mapped_column(String(64))
    scope: Mapped[dict[str, Any]] = mapped_column(JSONType)
    model_id: Mapped[str] = mapped_column(String(255))
    summary: Mapped[str] = mapped_column(Text)
    # pending -> approved | rejected | cancelled; never back to pending (expiry is by time).
    status: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime)
    decided_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    decided_by: Mapped[str | None] = mapped_column(String(255))
    reason: Mapped[str | None] = mapped_column(Text)
    outcome_status: Mapped[str | None] = mapped_column(String(16))
    result: Mapped[Any | None] = mapped_column(JSONType)


class ProposalRow(Base):
    __tablename__ = "tool_proposals"
    __table_args__ = (
        Index("ix_tool_proposals_queue", "conversation_id", "status", "position"),
        UniqueConstraint("run_id", "tool_call_id", name="uq_tool_proposals_run_call"),
        UniqueConstraint("provisional_id", name="uq_tool_proposals_provisional_id"),
    )

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    owner_id: Mapped[str] = mapped_column(String(255), index=True)
    conversation_id: Mapped[str] = mapped_column(
        String(64), ForeignKey("conversations.id", ondelete="CASCADE")
    )
    run_id: Mapped[str] = mapped_column(String(64))
    tool_call_id: Mapped[str] = mapped_column(String(128))
    tool_name: Mapped[str] = mapped_column(String(64))
    args: Mapped[dict[str, Any]] = mapped_column(JSONType)
    scope: Mapped[dict[str, Any]] = mapped_column(JSONType)
    model_id: Mapped[str] = mapped_column(String(255))
    summary: Mapped[str] = mapped_column(Text)
    provisional_id: Mapped[str | None] = mapped_column(String(64))
    # Call order (nanoseconds at the call's start): the order the batch is applied in.
    position: Mapped[int] = mapped_column(BigInteger)
    # pending -> applied | rejected; applied -> undone (its batch was undone)
    status: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    decided_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    batch_id: Mapped[str | None] = mapped_column(
        String(64), ForeignKey("tool_proposal_batches.id", ondelete="SET NULL")
    )
    result: Mapped[Any | None] = mapped_column(JSONType)


class ProposalBatchRow(Base):
    __tablename__ = "tool_proposal_batches"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    owner_id: Mapped[str] = mapped_column(String(255))
    conversation_id: Mapped[str] = mapped_column(
        String(64), ForeignKey("conversations.id", ondelete="CASCADE"), index=True
    )
    approved_by: Mapped[str] = mapped_column(String(255))
    audit_id: Mapped[str] = mapped_column(String(64))
    changes: Mapped[list[Any]] = mapped_column(JSONType)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)


class ElicitationRow(Base):
    """A question a tool asked the user mid-call, and what the tool needs to continue.

    `state` is the handler's continuation (for an MCP server: its opaque request state and
    the request key); it never leaves the service except back to the same tool."""

    __tablename__ = "tool_elicitations"
    __table_args__ = (
        Index("ix_tool_elicitations_call", "owner_id", "conversation_id", "tool_call_id"),
    )

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    owner_id: Mapped[str] = mapped_column(String(255))
    conversation_id: Mapped[str] = mapped_column(
        String(64), ForeignKey("conversations.id", ondelete="CASCADE")
    )
    run_id: Mapped[str] = mapped_column(String(64))
    tool_call_id: Mapped[str] = mapped_column(String(128))
    tool_name: Mapped[str] = mapped_column(String(64))
    args: Mapped[dict[str, Any]] = mapped_column(JSONType)
    scope: Mapped[dict[str, Any]] = mapped_column(JSONType)
    model_id: Mapped[str] = mapped_column(String(255))
    message: Mapped[str] = mapped_column(Text)
    requested_schema: Mapped[dict[str, Any]] = mapped_column(JSONType)
    state: Mapped[dict[str, Any]] = mapped_column(JSONType)
    # pending -> answered | cancelled (its run was stopped)
    status: Mapped[str] = mapped_column(String(16))
    action: Mapped[str | None] = mapped_column(String(16))
    # A keyed (or salted) hash of the answer, action and content (the content itself is
    # never stored): the same answer sent again is known (0016_elicitation_answer_hash,
    # `app.toolruntime.answer_seal`)
    answer_hash: Mapped[str | None] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    answered_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
