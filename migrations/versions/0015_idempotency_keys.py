"""Create requests keep their outcome under the caller's Idempotency-Key.

Revision ID: 0015_idempotency_keys
Revises: 0014_run_cancel_requests
Create Date: 2026-12-02

A client that retried a create after a lost answer (a 503 `database_unavailable` raised
by a COMMIT that did land) created the thing twice. A request with an `Idempotency-Key`
now stores its outcome in this table in the same transaction as what it created; the
retry answers it again.

Runs on SQLite and Postgres. Keep in step with `app/store/tables/idempotency.py`: a test
compares the two.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0015_idempotency_keys"
down_revision: str | Sequence[str] | None = "0014_run_cancel_requests"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def upgrade() -> None:
    op.create_table(
        "idempotency_keys",
        sa.Column("owner_id", sa.String(length=255), nullable=False),
        sa.Column("key", sa.String(length=255), nullable=False),
        sa.Column("fingerprint", sa.String(length=64), nullable=False),
        sa.Column("status", sa.Integer(), nullable=False),
        sa.Column("body", JSON, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("owner_id", "key", name="pk_idempotency_keys"),
    )


def downgrade() -> None:
    op.drop_table("idempotency_keys")
