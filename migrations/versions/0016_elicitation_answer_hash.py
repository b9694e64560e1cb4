"""A question's answer keeps a hash of itself, so the same answer sent again is known.

Revision ID: 0016_elicitation_answer_hash
Revises: 0015_idempotency_keys
Create Date: 2026-12-02

A client whose answer to a tool's question met an outage after it committed (503
`database_unavailable`) sends it again; the service answers the same answer with where the
call stands and refuses another one. The content itself is still never stored: only the
sha256 of the canonical JSON of action and content.

Runs on SQLite and Postgres. Keep in step with `app/store/tables/tools.py`.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0016_elicitation_answer_hash"
down_revision: str | Sequence[str] | None = "0015_idempotency_keys"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("tool_elicitations") as batch:
        batch.add_column(sa.Column("answer_hash", sa.String(length=64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("tool_elicitations") as batch:
        batch.drop_column("answer_hash")
