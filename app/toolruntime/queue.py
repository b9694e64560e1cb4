"""A user's review queue across conversations: what waits (approvals, proposals) and the
feed of changes to it, for a badge and a review panel that never poll.

The feed is the `queue_events` table (`app.store.repos.queue`), written in the
transaction of each change, numbered per user in commit order. `follow` reads it after a
cursor (an SSE `Last-Event-ID`), so a reader that reconnects, on any instance, resumes
where it stopped. Expiry is the one change nothing writes (time passes): `state` and
`follow` write the `expired` events that are due before reading.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from app.domain.identity import Caller
from app.store.database import Database
from app.store.repos.queue import Pending, QueueEvent, QueueItem

POLL_SECONDS = 1.0


@dataclass(frozen=True)
class QueueState:
    cursor: int  # the last event this state includes: follow from here
    pending: Pending
    items: list[QueueItem]


def _now() -> datetime:
    return datetime.now(UTC)


class ReviewQueue:
    def __init__(self, db: Database, *, poll_seconds: float = POLL_SECONDS) -> None:
        self.db = db
        self.poll_seconds = poll_seconds

    async def state(self, caller: Caller) -> QueueState:
        await self._expire(caller)
        async with self.db.read() as tx:
            cursor = await tx.queue.head(caller.user_id)
            now = _now()
            pending = await tx.queue.pending(caller.user_id, now=now)
            items = await tx.queue.pending_items(caller.user_id, now=now)
        return QueueState(cursor=cursor, pending=pending, items=items)

    async def follow(
        self, caller: Caller, after: int, *, stop: Callable[[], bool] = lambda: False
    ) -> AsyncIterator[list[QueueEvent]]:
        """Batches of the user's events after `after`, as they commit, until `stop()`."""
        cursor = after
        while not stop():
            await self._expire(caller)
            async with self.db.read() as tx:
                batch = await tx.queue.after(caller.user_id, cursor)
            if batch:
                cursor = batch[-1].seq
                yield batch
                continue
            await asyncio.sleep(self.poll_seconds)

    async def _expire(self, caller: Caller) -> None:
        async with self.db.write() as tx:
            await tx.queue.expire_due(caller.user_id, now=_now())
