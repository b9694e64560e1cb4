"""Run events keep the JSON they were streamed with: `run_events.data` becomes TEXT.

Revision ID: 0007_event_text
Revises: 0006_usage
Create Date: 2026-12-01

As JSONB, Postgres re-ordered and re-spaced each event, so a replay had to parse and
re-encode it and still differed byte-wise from the live stream. As TEXT the stored bytes
are the streamed ones. Existing rows are converted in place: on Postgres `jsonb::text`
(valid JSON with the same values, in the key order Postgres kept), on SQLite the JSON
text already stored. The downgrade turns the text back into JSON/JSONB.

Runs on SQLite and Postgres. Keep in step with `app/store/tables/core.py`: a test
compares the two.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0007_event_text"
down_revision: str | Sequence[str] | None = "0006_usage"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.alter_column(
            "run_events",
            "data",
            type_=sa.Text(),
            existing_type=postgresql.JSONB(),
            existing_nullable=False,
            postgresql_using="data::text",
        )
        return
    with op.batch_alter_table("run_events") as batch:
        batch.alter_column("data", type_=sa.Text(), existing_type=sa.JSON())


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.alter_column(
            "run_events",
            "data",
            type_=postgresql.JSONB(),
            existing_type=sa.Text(),
            existing_nullable=False,
            postgresql_using="data::jsonb",
        )
        return
    with op.batch_alter_table("run_events") as batch:
        batch.alter_column("data", type_=sa.JSON(), existing_type=sa.Text())
