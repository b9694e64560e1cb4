"""Queue events: a per-user, sequenced feed of changes to pending approvals and proposals.

Revision ID: 0005_queue_events
Revises: 0004_files
Create Date: 2026-12-01

Runs on SQLite and Postgres. Keep in step with `app/store/tables/queue.py`: a test
compares the two.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0005_queue_events"
down_revision: str | Sequence[str] | None = "0004_files"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _json() -> sa.types.TypeEngine[Any]:
    return sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def upgrade() -> None:
    op.create_table(
        "queue_heads",
        sa.Column("user_id", sa.String(length=255), nullable=False),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("user_id", name="pk_queue_heads"),
    )
    op.create_table(
        "queue_events",
        sa.Column("user_id", sa.String(length=255), nullable=False),
        sa.Column("seq", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("item_type", sa.String(length=16), nullable=False),
        sa.Column("item_id", sa.String(length=64), nullable=False),
        sa.Column("conversation_id", sa.String(length=64), nullable=True),
        sa.Column("data", _json(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("user_id", "seq", name="pk_queue_events"),
        sa.UniqueConstraint("item_id", "kind", name="uq_queue_events_item_kind"),
    )


def downgrade() -> None:
    op.drop_table("queue_events")
    op.drop_table("queue_heads")
