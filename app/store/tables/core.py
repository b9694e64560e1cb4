"""The core tables: conversations, messages, runs, run events, audit log.

Rows never leave `app.store`: repositories turn them into `app.store.records` and domain
types. Migrations in `migrations/versions/0001_core.py` create exactly these tables; a test
compares the two (`alembic compare_metadata`), so a change here needs a migration.
Column types and ids shared by every table are in `app.store.tables.types`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    Boolean,
    ForeignKey,
    ForeignKeyConstraint,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
    false,
    text,
)
from sqlalchemy.orm import Mapped, mapped_column

from app.store.db import Base
from app.store.tables.types import JSONType, UTCDateTime


class ConversationRow(Base):
    __tablename__ = "conversations"
    __table_args__ = (
        # Serves the owner's list, newest first, and its keyset cursor.
        Index("ix_conversations_owner_updated", "owner_id", "updated_at", "id"),
    )

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    owner_id: Mapped[str] = mapped_column(String(255))
    title: Mapped[str | None] = mapped_column(String(255))
    title_set_by_user: Mapped[bool] = mapped_column(Boolean, server_default=false())
    model: Mapped[str | None] = mapped_column(String(255))
    system_prompt: Mapped[str | None] = mapped_column(Text)
    mode: Mapped[str] = mapped_column(String(16), server_default=text("'auto'"))
    scope: Mapped[dict[str, Any]] = mapped_column(JSONType)
    metadata_: Mapped[dict[str, Any]] = mapped_column("metadata", JSONType)
    archived_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime)
    message_count: Mapped[int] = mapped_column(Integer, server_default=text("0"))
    last_message_preview: Mapped[str | None] = mapped_column(String(255))
    active_run_id: Mapped[str | None] = mapped_column(String(64))
    # The position the next appended message takes (one past the last, superseded ones
    # included): the append's UPDATE of this row numbers its message, no MAX() read.
    next_position: Mapped[int] = mapped_column(Integer, server_default=text("0"))
    # `chat`, or `background_response` for the conversation holding a background response
    # sent without one: stored (retrievable, cancellable, purged with its owner's data)
    # but never in the owner's conversation list.
    kind: Mapped[str] = mapped_column(String(32), server_default=text("'chat'"))


class MessageRow(Base):
    """One version of a message. Edits and regenerations supersede rows, never delete them.

    The key is (conversation_id, id): message ids come from clients too, so one user's id
    can never collide with another user's row.
    """

    __tablename__ = "messages"
    __table_args__ = (
        UniqueConstraint("conversation_id", "position", name="uq_messages_conversation_position"),
    )

    conversation_id: Mapped[str] = mapped_column(
        String(64), ForeignKey("conversations.id", ondelete="CASCADE"), primary_key=True
    )
    id: Mapped[str] = mapped_column(String(128), primary_key=True)
    owner_id: Mapped[str] = mapped_column(String(255))
    position: Mapped[int] = mapped_column(Integer)
    role: Mapped[str] = mapped_column(String(16))
    content: Mapped[Any] = mapped_column(JSONType)
    schema_version: Mapped[int] = mapped_column(Integer)
    metadata_: Mapped[dict[str, Any] | None] = mapped_column("metadata", JSONType)
    run_id: Mapped[str | None] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    superseded_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    superseded_by: Mapped[str | None] = mapped_column(String(128))


class RunRow(Base):
    __tablename__ = "runs"
    __table_args__ = (
        Index("ix_runs_conversation_id", "conversation_id"),
        Index("ix_runs_status", "status"),
    )

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    conversation_id: Mapped[str | None] = mapped_column(
        String(64), ForeignKey("conversations.id", ondelete="CASCADE")
    )
    owner_id: Mapped[str] = mapped_column(String(255), index=True)
    status: Mapped[str] = mapped_column(String(32))
    model: Mapped[str] = mapped_column(String(255))
    assistant_message_id: Mapped[str | None] = mapped_column(String(128))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    ended_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    usage: Mapped[dict[str, Any] | None] = mapped_column(JSONType)
    error: Mapped[dict[str, Any] | None] = mapped_column(JSONType)
    last_seq: Mapped[int] = mapped_column(Integer, server_default=text("0"))
    # What a continuation needs to offer the model the same turn again (client tools,
    # tool_choice): the browser sends them once, with the user message.
    options: Mapped[dict[str, Any] | None] = mapped_column(JSONType)
    # The process running it and when that process last said so: a run whose heartbeat
    # is older than the lease belongs to a dead process and is closed as interrupted.
    instance_id: Mapped[str | None] = mapped_column(String(64))
    heartbeat_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # A cancel received by another instance, kept until the one running it reads it (the
    # bus's message may be lost while its connection is down). 0014_run_cancel_requests.
    cancel_requested_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


class RunEventRow(Base):
    """A batch of a run's events, one row per batch (`app.store.repos.events`)."""

    __tablename__ = "run_events"
    __table_args__ = (ForeignKeyConstraint(["run_id"], ["runs.id"], ondelete="CASCADE"),)

    run_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    # The batch's last sequence number.
    seq: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    # Where each event is in `data`: "seq type size" per event, space separated.
    frames: Mapped[str] = mapped_column(Text)
    # The events' JSON one after the other, exactly as streamed (not JSON/JSONB, which a
    # database may re-space or re-order): a replay sends these bytes as they are.
    data: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)


class AuditRow(Base):
    __tablename__ = "audit_log"
    __table_args__ = (
        Index("ix_audit_log_target", "target_type", "target_id"),
        Index("ix_audit_log_actor_at", "actor_id", "at"),
    )

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    at: Mapped[datetime] = mapped_column(UTCDateTime)
    actor_id: Mapped[str] = mapped_column(String(255))
    action: Mapped[str] = mapped_column(String(64))
    target_type: Mapped[str] = mapped_column(String(64))
    target_id: Mapped[str] = mapped_column(String(128))
    details: Mapped[dict[str, Any] | None] = mapped_column(JSONType)
