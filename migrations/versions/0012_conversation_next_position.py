"""Conversations keep the position of their next message.

Revision ID: 0012_conversation_next_position
Revises: 0011_background_jobs
Create Date: 2026-12-01

Appending a message read MAX(position) of the conversation's messages after taking its
row lock; the conversation's UPDATE now hands out the position itself. Existing
conversations start one past their last message (superseded ones included), so numbering
goes on without a gap or a repeat.

Runs on SQLite and Postgres. Keep in step with `app/store/tables/core.py`: a test compares
the two.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012_conversation_next_position"
down_revision: str | Sequence[str] | None = "0011_background_jobs"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "conversations",
        sa.Column("next_position", sa.Integer(), server_default=sa.text("0"), nullable=False),
    )
    op.execute(
        "UPDATE conversations SET next_position = COALESCE(("
        "SELECT MAX(messages.position) + 1 FROM messages "
        "WHERE messages.conversation_id = conversations.id), 0)"
    )


def downgrade() -> None:
    # ALTER TABLE ... DROP COLUMN on SQLite too (3.35+), not a batch: a batch copies the
    # table and drops the old one, and with foreign keys on that drop cascades to every
    # message of every conversation.
    op.drop_column("conversations", "next_position")
