"""Usage records: one row per model call (tokens, cost, user, conversation, run).

Revision ID: 0006_usage
Revises: 0005_queue_events
Create Date: 2026-12-01

Runs on SQLite and Postgres. Keep in step with `app/store/tables/usage.py`: a test
compares the two. No foreign key to conversations: usage outlives a purged conversation
(what was spent stays spent).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006_usage"
down_revision: str | Sequence[str] | None = "0005_queue_events"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "usage_records",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("user_id", sa.String(length=255), nullable=False),
        sa.Column("roles", sa.String(length=1024), nullable=False),
        sa.Column("conversation_id", sa.String(length=64), nullable=True),
        sa.Column("run_id", sa.String(length=64), nullable=False),
        sa.Column("model", sa.String(length=255), nullable=False),
        sa.Column("input_tokens", sa.Integer(), nullable=False),
        sa.Column("output_tokens", sa.Integer(), nullable=False),
        sa.Column("cached_tokens", sa.Integer(), nullable=False),
        sa.Column("estimated", sa.Boolean(), nullable=False),
        sa.Column("cost", sa.Float(), nullable=True),
        sa.Column("day", sa.String(length=10), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_usage_records"),
    )
    op.create_index("ix_usage_records_user_created", "usage_records", ["user_id", "created_at"])
    op.create_index("ix_usage_records_created_at", "usage_records", ["created_at"])


def downgrade() -> None:
    op.drop_index("ix_usage_records_created_at", table_name="usage_records")
    op.drop_index("ix_usage_records_user_created", table_name="usage_records")
    op.drop_table("usage_records")
