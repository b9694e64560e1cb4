"""Lapsed idempotency keys are found by their expiry, to be deleted.

Revision ID: 0017_idempotency_key_expiry
Revises: 0016_elicitation_answer_hash
Create Date: 2026-12-03

A caller's lapsed keys were deleted only when that caller kept a new one, so the outcome
of a caller who never came back (a conversation's title, an item's text) stayed for ever.
Each key kept now also deletes a few lapsed keys of anyone (`app.store.idempotency`),
found through this index.

Runs on SQLite and Postgres. Keep in step with `app/store/tables/idempotency.py`.
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0017_idempotency_key_expiry"
down_revision: str | Sequence[str] | None = "0016_elicitation_answer_hash"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index("ix_idempotency_keys_expires_at", "idempotency_keys", ["expires_at"])


def downgrade() -> None:
    op.drop_index("ix_idempotency_keys_expires_at", table_name="idempotency_keys")
