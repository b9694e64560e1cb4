"""The review queue's change feed: one row per change to a user's pending approvals and
proposals, numbered per user (migration `0005_queue_events`).

- `queue_heads`: each user's last sequence number. Taking the next one is an upsert on
  this row, which holds the row lock until the change commits, so a user's events commit
  in sequence order and a reader that has seen `seq` never misses a smaller one later.
- `queue_events`: (user, seq) -> what changed. An item has each kind at most once
  (`uq_queue_events_item_kind`), so a change noticed twice (an expiry) is written once.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from app.store.db import Base
from app.store.tables.types import JSONType, UTCDateTime


class QueueHeadRow(Base):
    __tablename__ = "queue_heads"

    user_id: Mapped[str] = mapped_column(String(255), primary_key=True)
    seq: Mapped[int] = mapped_column(BigInteger)


class QueueEventRow(Base):
    __tablename__ = "queue_events"
    __table_args__ = (UniqueConstraint("item_id", "kind", name="uq_queue_events_item_kind"),)

    user_id: Mapped[str] = mapped_column(String(255), primary_key=True)
    seq: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    # added | decided | expired | applied | undone
    kind: Mapped[str] = mapped_column(String(16))
    # approval | proposal
    item_type: Mapped[str] = mapped_column(String(16))
    item_id: Mapped[str] = mapped_column(String(64))
    conversation_id: Mapped[str | None] = mapped_column(String(64))
    data: Mapped[dict[str, Any]] = mapped_column(JSONType)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
