"""The run event log: append in batches, read after a sequence number.

A batch is stored as ONE row of `run_events` (a run writes a handful of rows, not one per
streamed token): `seq` is the batch's last sequence number, `data` its events' JSON
texts one after the other, exactly as streamed, and `frames` says where each one is.

Why this framing. `frames` is "seq type size" per event, space separated, `size` being
the UTF-8 length of the event's JSON in bytes. Lengths frame any text: a separator
(say newline-delimited JSON) would hold only as long as no stored text contains it, and
what the column holds is only promised to be valid JSON (0007 converted JSONB's text,
whatever it was), which may have newlines between tokens. Bytes, not characters: the
writer has each event as the bytes it was streamed with and only measures them (one
decode for the whole batch); the reader encodes the batch's text once and slices it. So
nothing parses JSON on either side, and a replay sends the bytes the live stream sent.
Keying the row by its LAST seq keeps both queries plain: `seq > after` finds every row
holding an event after `after` (a resume inside a batch skips that row's earlier events),
and MAX(seq) is still the run's last stored event.

No owner filter here: the run manager and the events route look the run up with
`RunRepo.get(owner_id, ...)` first.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, cast

from sqlalchemy import Table, func, insert, select
from sqlalchemy.engine import Dialect
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import aliased

from app.domain.events import SequencedEvent
from app.store.tables.core import RunEventRow
from app.store.tables.types import utcnow

_TABLE = cast(Table, RunEventRow.__table__)
_NO_END = 2**31 - 1  # above any seq (an INTEGER column)


class EventRepo:
    """A run's events. Wraps a session; never commits."""

    def __init__(self, session: AsyncSession) -> None:
        self._session = session

    async def append_many(self, run_id: str, events: list[SequencedEvent]) -> None:
        """Write a batch as one row; a batch ending at a stored seq is an IntegrityError.

        Each event is stored as the JSON it is (or will be) streamed with, already encoded
        once for the live readers. The row goes to the driver as it is (`_BatchInsert`),
        without SQLAlchemy's processing of parameters."""
        if not events:
            return
        connection = await self._session.connection()
        sql, parameters = driver_batch(connection.dialect, run_id, events)
        await connection.exec_driver_sql(sql, parameters)

    async def after(
        self, run_id: str, seq: int = 0, *, limit: int | None = None
    ) -> list[SequencedEvent]:
        """Events with a sequence number above `seq` (at most `limit`), in order, carrying
        the JSON they were streamed with (parsed only if a reader needs their fields)."""
        query = (
            select(RunEventRow.frames, RunEventRow.data)
            .where(RunEventRow.run_id == run_id, RunEventRow.seq > seq)
            .order_by(RunEventRow.seq)
        )
        if limit is not None:
            # Up to the row holding seq + limit: the rows read hold at most `limit` events
            # plus the rest of that one batch, never the rest of a long run.
            later = aliased(RunEventRow)
            end = (
                select(func.min(later.seq))
                .where(later.run_id == run_id, later.seq >= seq + limit)
                .scalar_subquery()
            )
            query = query.where(RunEventRow.seq <= func.coalesce(end, _NO_END))
        rows = await self._session.execute(query)
        found: list[SequencedEvent] = []
        for frames, data in rows.all():
            found += unframe(frames, data, seq)
        return found if limit is None else found[:limit]

    async def last_seq(self, run_id: str) -> int:
        """The highest stored sequence number, 0 when nothing is stored yet."""
        found = await self._session.scalar(
            select(func.max(RunEventRow.seq)).where(RunEventRow.run_id == run_id)
        )
        return int(found or 0)


def frame(events: list[SequencedEvent]) -> tuple[str, str]:
    """A batch's `frames` and `data` (see the module's docstring)."""
    texts = SequencedEvent.jsons(events)
    frames = " ".join([f"{e.seq} {e.type} {len(t)}" for e, t in zip(events, texts, strict=True)])
    return frames, b"".join(texts).decode()


def unframe(frames: str, data: str, after: int = 0) -> list[SequencedEvent]:
    """A stored batch's events above `after`, each carrying its slice of `data`."""
    parts = frames.split(" ")
    raw = data.encode()
    stored = SequencedEvent.stored
    out: list[SequencedEvent] = []
    start = 0
    for seq, type_, size in zip(parts[0::3], parts[1::3], parts[2::3], strict=True):
        end = start + int(size)
        if int(seq) > after:
            out.append(stored(int(seq), type_, raw[start:end]))
        start = end
    if start != len(raw):
        raise ValueError("a run_events row's frames do not cover its data")
    return out


def driver_batch(dialect: Dialect, run_id: str, events: list[SequencedEvent]) -> tuple[str, Any]:
    """The batch's INSERT as the driver takes it: the SQL and its one row of parameters."""
    batch = _BatchInsert.of(dialect)
    frames, data = frame(events)
    return batch.sql, (run_id, events[-1].seq, frames, data, batch.stamp(utcnow()))


def batch_params(run_id: str, events: list[SequencedEvent]) -> dict[str, Any]:
    """The batch's row as `append_message`'s `whole` takes it: parameters `e_` and the
    column."""
    frames, data = frame(events)
    return {
        "e_run_id": run_id,
        "e_seq": events[-1].seq,
        "e_frames": frames,
        "e_data": data,
        "e_created_at": utcnow(),
    }


class _BatchInsert:
    """The driver-level INSERT of an event batch's row, made once per database dialect.

    `stamp` turns the batch's `created_at` into what the driver takes, through the
    column's own type (`UTCDateTime`)."""

    _made: dict[str, _BatchInsert] = {}

    def __init__(self, dialect: Dialect) -> None:
        created_at = _TABLE.c.created_at.type
        process = created_at.dialect_impl(dialect).bind_processor(dialect)
        self.stamp: Callable[[datetime], Any] = process or (lambda value: value)
        compiled = insert(_TABLE).compile(dialect=dialect)
        assert compiled.positiontup == ["run_id", "seq", "frames", "data", "created_at"]
        self.sql = str(compiled)

    @classmethod
    def of(cls, dialect: Dialect) -> _BatchInsert:
        made = cls._made.get(dialect.name)
        if made is None:
            made = cls._made[dialect.name] = cls(dialect)
        return made
