"""Usage records: one row per model call, what it used and cost, and whose it was.

Created by `migrations/versions/0006_usage.py`; `api_key_id` (the key a call was made
with, for per-key budgets) by `0010_usage_api_key.py`. Budgets are sums over these rows,
so they hold across instances and restarts. `day` is the call's UTC date as text (`2026-12-01`),
so reports group by it the same way on SQLite and Postgres; `roles` is the caller's roles
at the time, as `,admin,staff,` (a role reads as a substring match, the admin view
groups by it).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Boolean, Float, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from app.store.db import Base
from app.store.tables.types import UTCDateTime


class UsageRow(Base):
    __tablename__ = "usage_records"
    __table_args__ = (
        Index("ix_usage_records_user_created", "user_id", "created_at"),
        Index("ix_usage_records_created_at", "created_at"),
        Index("ix_usage_records_api_key_created", "api_key_id", "created_at"),
    )

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    user_id: Mapped[str] = mapped_column(String(255))
    roles: Mapped[str] = mapped_column(String(1024))
    conversation_id: Mapped[str | None] = mapped_column(String(64))
    run_id: Mapped[str] = mapped_column(String(64))
    model: Mapped[str] = mapped_column(String(255))
    input_tokens: Mapped[int] = mapped_column(Integer)
    output_tokens: Mapped[int] = mapped_column(Integer)
    cached_tokens: Mapped[int] = mapped_column(Integer)
    estimated: Mapped[bool] = mapped_column(Boolean)
    cost: Mapped[float | None] = mapped_column(Float)
    day: Mapped[str] = mapped_column(String(10))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    api_key_id: Mapped[str | None] = mapped_column(String(64))
