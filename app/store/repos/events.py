"""The run event log: append in batches, read after a sequence number.

No owner filter here: the run manager and the events route look the run up with
`RunRepo.get(owner_id, ...)` first.
"""

from __future__ import annotations

from typing import cast

from sqlalchemy import Table, func, insert, select
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
        """Write a batch in one INSERT; a repeated (run_id, seq) is an IntegrityError.

        Each event is stored as the JSON it is (or will be) streamed with, already encoded
        once for the live readers."""
        if not events:
            return
        now = utcnow()
        # A Core INSERT of the table: the ORM's bulk path costs a Python pass per row.
        await self._session.execute(
            insert(_TABLE),
            [
                {
                    "run_id": run_id,
                    "seq": e.seq,
                    "type": e.type,
                    "data": e.json().decode(),
                    "created_at": now,
                }
                for e in events
            ],
        )

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
