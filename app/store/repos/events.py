"""The run event log: append in batches, read after a sequence number.

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

from app.domain.events import SequencedEvent
from app.store.tables.core import RunEventRow
from app.store.tables.types import utcnow

_TABLE = cast(Table, RunEventRow.__table__)


class EventRepo:
    """A run's events. Wraps a session; never commits."""

    def __init__(self, session: AsyncSession) -> None:
        self._session = session

    async def append_many(self, run_id: str, events: list[SequencedEvent]) -> None:
        """Write a batch in one statement; a repeated (run_id, seq) is an IntegrityError.

        Each event is stored as the JSON it is (or will be) streamed with, already encoded
        once for the live readers. The rows go to the driver as they are (see
        `_BatchInsert`): SQLAlchemy's per-row parameter processing was most of a batch's
        cost, for four plain values and one timestamp shared by the whole batch."""
        if not events:
            return
        connection = await self._session.connection()
        sql, parameters = driver_batch(connection.dialect, run_id, events)
        await connection.exec_driver_sql(sql, parameters)

    async def after(
        self, run_id: str, seq: int = 0, *, limit: int | None = None
    ) -> list[SequencedEvent]:
        """Events with a sequence number above `seq`, in order, carrying the JSON they
        were streamed with (parsed only if a reader needs their fields)."""
        query = (
            select(RunEventRow.seq, RunEventRow.type, RunEventRow.data)
            .where(RunEventRow.run_id == run_id, RunEventRow.seq > seq)
            .order_by(RunEventRow.seq)
        )
        if limit is not None:
            query = query.limit(limit)
        rows = await self._session.execute(query)
        stored = SequencedEvent.stored
        return [stored(s, type_, data.encode()) for s, type_, data in rows.all()]

    async def last_seq(self, run_id: str) -> int:
        """The highest stored sequence number, 0 when nothing is stored yet."""
        found = await self._session.scalar(
            select(func.max(RunEventRow.seq)).where(RunEventRow.run_id == run_id)
        )
        return int(found or 0)


def driver_batch(dialect: Dialect, run_id: str, events: list[SequencedEvent]) -> tuple[str, Any]:
    """The batch's INSERT as the driver takes it: the SQL and its parameters (Postgres:
    five, the batch as three arrays; SQLite: one plain row per event, for `executemany`)."""
    batch = _BatchInsert.of(dialect)
    stamp = batch.stamp(utcnow())
    if batch.arrays:
        seqs, types, data = [], [], []
        for e in events:
            seqs.append(e.seq)
            types.append(e.type)
            data.append(e.json().decode())
        return batch.sql, (run_id, stamp, seqs, types, data)
    return batch.sql, [(run_id, e.seq, e.type, e.json().decode(), stamp) for e in events]


class _BatchInsert:
    """The driver-level INSERT of an event batch, made once per database dialect.

    Postgres gets one statement with the batch as three arrays (`unnest`), so the whole
    batch is one Bind of five parameters; SQLite an `executemany` of the plain rows, which
    the driver loops over in C. `stamp` turns the batch's `created_at` into what the
    driver takes, through the column's own type (`UTCDateTime`)."""

    _made: dict[str, _BatchInsert] = {}

    def __init__(self, dialect: Dialect) -> None:
        created_at = _TABLE.c.created_at.type
        process = created_at.dialect_impl(dialect).bind_processor(dialect)
        self.stamp: Callable[[datetime], Any] = process or (lambda value: value)
        self.arrays = dialect.name == "postgresql"
        if self.arrays:
            self.sql = (
                "INSERT INTO run_events (run_id, seq, type, data, created_at) "
                "SELECT $1::varchar, e.seq, e.type, e.data, $2::timestamptz "
                "FROM unnest($3::integer[], $4::varchar[], $5::text[]) AS e(seq, type, data)"
            )
        else:
            compiled = insert(_TABLE).compile(dialect=dialect)
            assert compiled.positiontup == ["run_id", "seq", "type", "data", "created_at"]
            self.sql = str(compiled)

    @classmethod
    def of(cls, dialect: Dialect) -> _BatchInsert:
        made = cls._made.get(dialect.name)
        if made is None:
            made = cls._made[dialect.name] = cls(dialect)
        return made
