"""Conversation feed: a per-conversation, numbered log of run starts and of tool parts
changed outside their run, for the conversation's follow stream.

Revision ID: 0008_conversation_feed
Revises: 0007_event_text
Create Date: 2026-12-01

Runs on SQLite and Postgres. Keep in step with `app/store/tables/feed.py`: a test
compares the two. Rows go with their conversation (purge cascades).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0008_conversation_feed"
down_revision: str | Sequence[str] | None = "0007_event_text"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _json() -> sa.types.TypeEngine[Any]:
    return sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def upgrade() -> None:
    op.create_table(
        "conversation_feed",
        sa.Column("conversation_id", sa.String(length=64), nullable=False),
        sa.Column("seq", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("item_id", sa.String(length=128), nullable=False),
        sa.Column("run_id", sa.String(length=64), nullable=True),
        sa.Column("data", _json(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["conversation_id"],
            ["conversations.id"],
            name="fk_conversation_feed_conversation_id_conversations",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("conversation_id", "seq", name="pk_conversation_feed"),
        sa.UniqueConstraint("item_id", "kind", name="uq_conversation_feed_item_kind"),
    )


def downgrade() -> None:
    op.drop_table("conversation_feed")
