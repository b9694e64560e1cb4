"""A conversation has a kind: `chat`, or `background_response` for the one holding a
background response sent without a conversation.

Revision ID: 0019_conversation_kind
Revises: 0018_idempotency_conversation
Create Date: 2026-12-03

Such a conversation showed in its owner's conversation list (a chat UI's sidebar), so a
user who never made a conversation saw one. Lists now show only `chat`s; the held
conversation is still retrieved, cancelled and purged as before. Conversations made
before this revision for a background response carry `metadata.background_response:
"true"`; they are given their kind here.

Runs on SQLite and Postgres. Keep in step with `app/store/tables/core.py`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op

revision: str = "0019_conversation_kind"
down_revision: str | Sequence[str] | None = "0018_idempotency_conversation"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_conversations = sa.table(
    "conversations",
    sa.column("id", sa.String),
    sa.column("metadata", sa.Text),
    sa.column("kind", sa.String),
)


def _marked(metadata: Any) -> bool:
    value = json.loads(metadata) if isinstance(metadata, str) else metadata
    return isinstance(value, dict) and value.get("background_response") == "true"


def upgrade() -> None:
    op.add_column(
        "conversations",
        sa.Column("kind", sa.String(32), nullable=False, server_default=sa.text("'chat'")),
    )
    bind = op.get_bind()
    metadata_text = sa.cast(_conversations.c.metadata, sa.Text)
    candidates = bind.execute(
        sa.select(_conversations.c.id, metadata_text).where(
            metadata_text.like("%background_response%")
        )
    ).all()
    held = [cid for cid, metadata in candidates if _marked(metadata)]
    if held:
        bind.execute(
            sa.update(_conversations)
            .where(_conversations.c.id.in_(held))
            .values(kind="background_response")
        )


def downgrade() -> None:
    # A plain DROP COLUMN on SQLite too (as in 0012): a batch copies the table and drops
    # the old one, which cascades to every message of every conversation.
    op.drop_column("conversations", "kind")
