"""The run event log: append in batches, read after a sequence number.

No owner filter here: the run manager and the events route look the run up with
`RunRepo.get(owner_id, ...)` first.
"""

from __future__ import annotations

from sqlalchemy import func, insert, select
from sqlalchemy.ext.asyncio import AsyncSession

from app.domain.events import RUN_EVENT_ADAPTER, SequencedEvent
from app.store.tables.core import RunEventRow
from app.store.tables.types import utcnow


class EventRepo:
    """A run's events. Wraps a session; never commits."""

    def __init__(self, session: AsyncSession) -> None:
        self._session = session

    async def append_many(self, run_id: str, events: list[SequencedEvent]) -> None:
        """Write a batch in one INSERT; a repeated (run_id, seq) is an IntegrityError."""
        if not events:
            return
        now = utcnow()
        await self._session.execute(
            insert(RunEventRow),
            [
                {
                    "run_id": run_id,
                    "seq": e.seq,
                    "type": e.event.type,
                    "data": e.event.model_dump(mode="json"),
                    "created_at": now,
                }
                for e in events
            ],
        )

    async def after(
        self, run_id: str, seq: int = 0, *, limit: int | None = None
    ) -> list[SequencedEvent]:
        """Events with a sequence number above `seq`, in order."""
        query = (
            select(RunEventRow.seq, RunEventRow.data)
            .where(RunEventRow.run_id == run_id, RunEventRow.seq > seq)
            .order_by(RunEventRow.seq)
        )
        if limit is not None:
            query = query.limit(limit)
        rows = await self._session.execute(query)
        return [
            SequencedEvent(seq=s, event=RUN_EVENT_ADAPTER.validate_python(data))
            for s, data in rows.all()
        ]

    async def last_seq(self, run_id: str) -> int:
        """The highest stored sequence number, 0 when nothing is stored yet."""
        found = await self._session.scalar(
            select(func.max(RunEventRow.seq)).where(RunEventRow.run_id == run_id)
        )
        return int(found or 0)
