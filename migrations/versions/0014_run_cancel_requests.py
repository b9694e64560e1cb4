"""Runs keep a cancel asked for on an instance that does not run them.

Revision ID: 0014_run_cancel_requests
Revises: 0013_event_batches
Create Date: 2026-12-02

A cancel that arrives on another instance than the run's was only published on the live
bus (Redis pub/sub, at most once): while the owner's Redis connection was reconnecting it
was lost, and the run went on. The request is now written on the run's row first
(`cancel_requested_at`), and the owner reads it when its bus reconnects and at each lease
renewal (`app/runs/remote.py`).

Runs on SQLite and Postgres. Keep in step with `app/store/tables/core.py`: a test compares
the two.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014_run_cancel_requests"
down_revision: str | Sequence[str] | None = "0013_event_batches"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "runs", sa.Column("cancel_requested_at", sa.DateTime(timezone=True), nullable=True)
    )


def downgrade() -> None:
    # ALTER TABLE ... DROP COLUMN on SQLite too (3.35+), not a batch: a batch copies the
    # table and drops the old one, and with foreign keys on that drop cascades to the
    # run's events.
    op.drop_column("runs", "cancel_requested_at")
