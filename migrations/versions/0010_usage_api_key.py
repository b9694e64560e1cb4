"""Usage records name the API key a call was made with, for budgets per API key.

Revision ID: 0010_usage_api_key
Revises: 0009_elicitations
Create Date: 2026-12-01

Runs on SQLite and Postgres. Keep in step with `app/store/tables/usage.py`: a test
compares the two. Existing rows keep a null key (made with a JWT, or before this column).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010_usage_api_key"
down_revision: str | Sequence[str] | None = "0009_elicitations"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("usage_records", sa.Column("api_key_id", sa.String(length=64), nullable=True))
    op.create_index(
        "ix_usage_records_api_key_created", "usage_records", ["api_key_id", "created_at"]
    )


def downgrade() -> None:
    op.drop_index("ix_usage_records_api_key_created", table_name="usage_records")
    with op.batch_alter_table("usage_records") as batch:
        batch.drop_column("api_key_id")
