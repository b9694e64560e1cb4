"""Questions tools ask the user mid-call (MCP elicitations), kept until answered.

Revision ID: 0009_elicitations
Revises: 0008_conversation_feed
Create Date: 2026-12-01

Runs on SQLite and Postgres. Keep in step with `ElicitationRow` in
`app/store/tables/tools.py`: a test compares the two.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0009_elicitations"
down_revision: str | Sequence[str] | None = "0008_conversation_feed"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _json() -> sa.types.TypeEngine[Any]:
    return sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def _ts() -> sa.DateTime:
    return sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "tool_elicitations",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("owner_id", sa.String(length=255), nullable=False),
        sa.Column("conversation_id", sa.String(length=64), nullable=False),
        sa.Column("run_id", sa.String(length=64), nullable=False),
        sa.Column("tool_call_id", sa.String(length=128), nullable=False),
        sa.Column("tool_name", sa.String(length=64), nullable=False),
        sa.Column("args", _json(), nullable=False),
        sa.Column("scope", _json(), nullable=False),
        sa.Column("model_id", sa.String(length=255), nullable=False),
        sa.Column("message", sa.Text(), nullable=False),
        sa.Column("requested_schema", _json(), nullable=False),
        sa.Column("state", _json(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("action", sa.String(length=16), nullable=True),
        sa.Column("created_at", _ts(), nullable=False),
        sa.Column("answered_at", _ts(), nullable=True),
        sa.ForeignKeyConstraint(
            ["conversation_id"],
            ["conversations.id"],
            name="fk_tool_elicitations_conversation_id_conversations",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name="pk_tool_elicitations"),
    )
    op.create_index(
        "ix_tool_elicitations_call",
        "tool_elicitations",
        ["owner_id", "conversation_id", "tool_call_id"],
    )


def downgrade() -> None:
    op.drop_index("ix_tool_elicitations_call", table_name="tool_elicitations")
    op.drop_table("tool_elicitations")
