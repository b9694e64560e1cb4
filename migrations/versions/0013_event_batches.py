"""Run events are stored one row per batch, not one row per event.

Revision ID: 0013_event_batches
Revises: 0012_conversation_next_position
Create Date: 2026-12-02

A run streams some hundreds of events and wrote each as its own row: on SQLite most of
what a persisted run still cost the database. A row now holds a batch as the journal
writes it: `seq` is its last event's, `data` the events' JSON one after the other, as
streamed, and `frames` ("seq type size" per event, `size` in UTF-8 bytes) says where each
one is (`app/store/repos/events.py` argues the framing). The `type` column goes (it is
in `frames`).

Existing rows are converted run by run, in order of seq: consecutive events stored with
the same `created_at` were one batch (the journal stamps a batch once) and become one row
with that time, their texts kept byte for byte, so a stored conversation replays exactly
as before. The downgrade cuts each row back into one row per event with the row's time.
Both go through a scratch table, so no database ever holds a run's events twice, and
neither parses an event's JSON.

Runs on SQLite and Postgres. Keep in step with `app/store/tables/core.py`: a test compares
the two.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op

revision: str = "0013_event_batches"
down_revision: str | Sequence[str] | None = "0012_conversation_next_position"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_SCRATCH = "run_events_0013"
_CHUNK = 500

Columns = tuple[str, ...]


def upgrade() -> None:
    _rebuild(
        sa.text(
            "SELECT seq, type, data, created_at FROM run_events WHERE run_id = :run_id ORDER BY seq"
        ),
        _batches,
        drop="type",
        add=("frames", sa.Text()),
    )


def downgrade() -> None:
    _rebuild(
        sa.text(
            "SELECT frames, data, created_at FROM run_events WHERE run_id = :run_id ORDER BY seq"
        ),
        _events,
        drop="frames",
        add=("type", sa.String(length=32)),
    )


def _rebuild(
    read: sa.TextClause,
    convert: Callable[[str, list[Any]], Iterator[dict[str, Any]]],
    *,
    drop: str,
    add: tuple[str, sa.types.TypeEngine[Any]],
) -> None:
    """Each run's rows, read by `read`, turned by `convert` into the rows of the other
    form, kept in a scratch table while `run_events` loses `drop` and gains `add`."""
    name, type_ = add
    columns = ("run_id", "seq", name, "data", "created_at")
    op.create_table(
        _SCRATCH,
        sa.Column("run_id", sa.String(length=64), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column(name, type_, nullable=False),
        sa.Column("data", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    _convert(lambda run_id: convert(run_id, _rows(read, run_id)), columns)
    op.execute("DELETE FROM run_events")
    with op.batch_alter_table("run_events") as batch:
        batch.drop_column(drop)
        batch.add_column(sa.Column(name, type_, nullable=False))
    _copy_back(columns)


def _convert(rows_of: Callable[[str], Iterator[dict[str, Any]]], columns: Columns) -> None:
    """The converted rows of every run into the scratch table, a chunk at a time."""
    bind = op.get_bind()
    runs = bind.execute(sa.text("SELECT DISTINCT run_id FROM run_events")).scalars().all()
    statement = sa.insert(_table(_SCRATCH, columns))
    chunk: list[dict[str, Any]] = []
    for run_id in runs:
        for row in rows_of(run_id):
            chunk.append(row)
            if len(chunk) >= _CHUNK:
                bind.execute(statement, chunk)
                chunk = []
    if chunk:
        bind.execute(statement, chunk)


def _rows(read: sa.TextClause, run_id: str) -> list[Any]:
    return list(op.get_bind().execute(read, {"run_id": run_id}))


def _copy_back(columns: Columns) -> None:
    scratch = _table(_SCRATCH, columns)
    op.execute(sa.insert(_table("run_events", columns)).from_select(columns, scratch.select()))
    op.drop_table(_SCRATCH)


def _table(name: str, columns: Columns) -> sa.TableClause:
    return sa.table(name, *(sa.column(c) for c in columns))


def _batches(run_id: str, rows: list[Any]) -> Iterator[dict[str, Any]]:
    """One row per run of consecutive events stored at the same time."""
    group: list[Any] = []
    for row in rows:
        if group and row.created_at != group[-1].created_at:
            yield _batch(run_id, group)
            group = []
        group.append(row)
    if group:
        yield _batch(run_id, group)


def _batch(run_id: str, group: list[Any]) -> dict[str, Any]:
    texts = [row.data.encode() for row in group]
    frames = " ".join(f"{r.seq} {r.type} {len(t)}" for r, t in zip(group, texts, strict=True))
    return {
        "run_id": run_id,
        "seq": group[-1].seq,
        "frames": frames,
        "data": b"".join(texts).decode(),
        "created_at": group[-1].created_at,
    }


def _events(run_id: str, rows: list[Any]) -> Iterator[dict[str, Any]]:
    """Each stored batch cut back into its events."""
    for row in rows:
        parts = row.frames.split(" ")
        raw = row.data.encode()
        start = 0
        for seq, type_, size in zip(parts[0::3], parts[1::3], parts[2::3], strict=True):
            end = start + int(size)
            yield {
                "run_id": run_id,
                "seq": int(seq),
                "type": type_,
                "data": raw[start:end].decode(),
                "created_at": row.created_at,
            }
            start = end
