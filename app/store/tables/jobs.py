"""Background jobs: the long-running tool calls that outlive the turn that made them.

Created by `migrations/versions/0011_background_jobs.py`. One row per call, bound to its
owner, conversation, run and tool call id. `status` moves once, from `running` to
`succeeded`, `failed` or `cancelled` (a conditional UPDATE, so a cancel and a finishing
job cannot both win). `instance_id` and `heartbeat_at` are the lease of the process
running it: a job whose lease lapsed was left by a dead process and is resumed or
failed, never lost. `delivered_at` is set once the result reached the conversation.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Index, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from app.store.db import Base
from app.store.tables.types import JSONType, UTCDateTime


class BackgroundJobRow(Base):
    __tablename__ = "background_jobs"
    __table_args__ = (
        UniqueConstraint("run_id", "tool_call_id", name="uq_background_jobs_run_call"),
        Index("ix_background_jobs_owner_created", "owner_id", "created_at"),
        Index("ix_background_jobs_status", "status", "heartbeat_at"),
    )

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    owner_id: Mapped[str] = mapped_column(String(255))
    # The caller's roles when the call was made, as `,admin,staff,`: the run that carries
    # the result on is made for the same caller.
    roles: Mapped[str] = mapped_column(String(1024))
    conversation_id: Mapped[str | None] = mapped_column(
        String(64), ForeignKey("conversations.id", ondelete="CASCADE"), index=True
    )
    run_id: Mapped[str] = mapped_column(String(64))
    tool_call_id: Mapped[str] = mapped_column(String(128))
    tool_name: Mapped[str] = mapped_column(String(64))
    args: Mapped[dict[str, Any]] = mapped_column(JSONType)
    scope: Mapped[dict[str, Any]] = mapped_column(JSONType)
    model_id: Mapped[str] = mapped_column(String(255))
    # running -> succeeded | failed | cancelled
    status: Mapped[str] = mapped_column(String(16))
    result: Mapped[Any | None] = mapped_column(JSONType)
    error: Mapped[str | None] = mapped_column(Text)
    instance_id: Mapped[str] = mapped_column(String(255))
    attempts: Mapped[int] = mapped_column(default=1)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    heartbeat_at: Mapped[datetime] = mapped_column(UTCDateTime)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    delivered_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
