"""Background jobs: long-running tool calls that outlive their turn.

Revision ID: 0011_background_jobs
Revises: 0010_usage_api_key
Create Date: 2026-12-01

Runs on SQLite and Postgres. Keep in step with `app/store/tables/jobs.py`: a test
compares the two.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0011_background_jobs"
down_revision: str | Sequence[str] | None = "0010_usage_api_key"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def upgrade() -> None:
    op.create_table(
        "background_jobs",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("owner_id", sa.String(length=255), nullable=False),
        sa.Column("roles", sa.String(length=1024), nullable=False),
        sa.Column("conversation_id", sa.String(length=64), nullable=True),
        sa.Column("run_id", sa.String(length=64), nullable=False),
        sa.Column("tool_call_id", sa.String(length=128), nullable=False),
        sa.Column("tool_name", sa.String(length=64), nullable=False),
        sa.Column("args", JSON, nullable=False),
        sa.Column("scope", JSON, nullable=False),
        sa.Column("model_id", sa.String(length=255), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("result", JSON, nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("instance_id", sa.String(length=255), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("heartbeat_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("delivered_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["conversation_id"],
            ["conversations.id"],
            name="fk_background_jobs_conversation_id_conversations",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name="pk_background_jobs"),
        sa.UniqueConstraint("run_id", "tool_call_id", name="uq_background_jobs_run_call"),
    )
    op.create_index(
        "ix_background_jobs_owner_created", "background_jobs", ["owner_id", "created_at"]
    )
    op.create_index("ix_background_jobs_status", "background_jobs", ["status", "heartbeat_at"])
    op.create_index("ix_background_jobs_conversation_id", "background_jobs", ["conversation_id"])


def downgrade() -> None:
    op.drop_index("ix_background_jobs_conversation_id", table_name="background_jobs")
    op.drop_index("ix_background_jobs_status", table_name="background_jobs")
    op.drop_index("ix_background_jobs_owner_created", table_name="background_jobs")
    op.drop_table("background_jobs")
