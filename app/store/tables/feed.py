"""A conversation's feed: what every open tab of the conversation must hear about besides
a run's own events, numbered per conversation (migration `0008_conversation_feed`).

- `conversation_feed`: (conversation, seq) -> a run started (`run`, with its `run_id`;
  `data.message` is the person's message it answers, as stored, when there is one) or a
  tool part changed outside its run (`part`: an approval decided or expired, a proposal
  batch applied, rejected or undone; `data` holds the part as stored and the cause).
  `item_id` + `kind` is unique, so a change noticed twice (an expiry) is written once.

An entry is numbered in its INSERT (the conversation's last number + 1) by a writer that
holds the conversation's row lock, so numbers follow commit order: a reader that has seen
`seq` never misses a smaller one committed later. No head table: every writer of a
conversation's tool state takes that lock already (the run claim, decisions).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, ForeignKey, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from app.store.db import Base
from app.store.tables.types import JSONType, UTCDateTime


class FeedRow(Base):
    __tablename__ = "conversation_feed"
    __table_args__ = (UniqueConstraint("item_id", "kind", name="uq_conversation_feed_item_kind"),)

    conversation_id: Mapped[str] = mapped_column(
        String(64), ForeignKey("conversations.id", ondelete="CASCADE"), primary_key=True
    )
    seq: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    # run | part
    kind: Mapped[str] = mapped_column(String(16))
    # the run's id (`run`), or what changed the part: `<cause>:<approval or proposal id>`
    item_id: Mapped[str] = mapped_column(String(128))
    run_id: Mapped[str | None] = mapped_column(String(64))
    data: Mapped[dict[str, Any]] = mapped_column(JSONType)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
