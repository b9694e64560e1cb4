"""An Idempotency-Key outcome names the conversation it is about, to be purged with it.

Revision ID: 0018_idempotency_conversation
Revises: 0017_idempotency_key_expiry
Create Date: 2026-12-03

A purge left the outcomes of keyed requests about the conversation (its title and
metadata, items' text, a turn's run), so a keyed retry after the purge answered the
purged conversation's body. A purge now deletes the outcomes that name it, in its own
transaction (`app.store.repos.conversations`). Outcomes kept before this revision name
none; they lapse with their key (`IDEMPOTENCY_KEY_TTL_SECONDS`).

Runs on SQLite and Postgres. Keep in step with `app/store/tables/idempotency.py`.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0018_idempotency_conversation"
down_revision: str | Sequence[str] | None = "0017_idempotency_key_expiry"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("idempotency_keys", sa.Column("conversation_id", sa.String(64), nullable=True))
    op.create_index(
        "ix_idempotency_keys_conversation", "idempotency_keys", ["owner_id", "conversation_id"]
    )


def downgrade() -> None:
    op.drop_index("ix_idempotency_keys_conversation", table_name="idempotency_keys")
    with op.batch_alter_table("idempotency_keys") as batch:
        batch.drop_column("conversation_id")
