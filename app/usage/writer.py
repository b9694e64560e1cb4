"""Usage rows written off the request path, in batches.

A stateless call nobody's budget reads (no budget applies to its caller) need not wait
for its usage row: the row is queued here and written with the others of the next
100 ms, or as soon as 100 are waiting, in one INSERT. The profile of a non-streaming
request had that row's own transaction at a fifth of its CPU.

    writer.add(entries)      # queued; written within `interval` (or at once when full)
    await writer.flush()     # everything queued, now (before a usage report is read)
    await writer.aclose()    # at shutdown: the last batch, retried within a bound

What a batch can lose: the rows queued in the last `interval` when the process is killed
outright (SIGKILL, power). A graceful stop writes them (`aclose`, after the runs ended);
a database that refuses a batch gets it again at the next tick, and the rows stay queued
(up to `max_queued`) until it takes them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence

from app.store.database import Database
from app.store.repos.usage import UsageEntry

log = logging.getLogger("chat_bff.usage")

INTERVAL = 0.1
BATCH = 100
# Beyond this many rows waiting for a database that refuses them, the oldest are dropped
# (and said so in the log) rather than growing without bound.
MAX_QUEUED = 100_000
RETRY_PAUSE = 1.0


class UsageWriter:
    def __init__(
        self,
        db: Database,
        *,
        interval: float = INTERVAL,
        batch: int = BATCH,
        max_queued: int = MAX_QUEUED,
    ) -> None:
        self._db = db
        self._interval = interval
        self._batch = batch
        self._max_queued = max_queued
        self._queued: list[UsageEntry] = []
        self._full = asyncio.Event()
        self._lock = asyncio.Lock()
        self._task: asyncio.Task[None] | None = None
        self._closed = False

    @property
    def queued(self) -> int:
        return len(self._queued)

    def add(self, entries: Sequence[UsageEntry]) -> None:
        self._queued.extend(entries)
        if len(self._queued) > self._max_queued:
            dropped = len(self._queued) - self._max_queued
            del self._queued[:dropped]
            log.error("usage rows dropped: the database refused them", extra={"rows": dropped})
        if self._closed:
            return  # written by `aclose`, which is under way
        if len(self._queued) >= self._batch:
            self._full.set()
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run(), name="usage writer")

    async def _run(self) -> None:
        # Ends when nothing is queued; the next `add` starts it again.
        while self._queued and not self._closed:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._full.wait(), self._interval)
            self._full.clear()
            if not await self.flush():
                await asyncio.sleep(RETRY_PAUSE)

    async def flush(self) -> bool:
        """Write what is queued now; False (rows kept, warning logged) when it failed."""
        async with self._lock:
            batch, self._queued = self._queued, []
            if not batch:
                return True
            try:
                async with self._db.write() as tx:
                    await tx.usage.insert(batch)
            except Exception:
                log.warning(
                    "could not write usage rows; kept for the next attempt",
                    extra={"rows": len(batch)},
                    exc_info=True,
                )
                self._queued[:0] = batch
                return False
            return True

    async def aclose(self, grace_seconds: float = 5.0) -> None:
        """Write what is left (graceful shutdown), retrying within `grace_seconds`.

        The batch in flight is waited for, never cancelled: a cancelled COMMIT leaves
        unknown whether its rows were kept."""
        self._closed = True
        self._full.set()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + grace_seconds
        if self._task is not None and not self._task.done():
            await asyncio.wait({self._task}, timeout=grace_seconds)
        while not await self.flush():
            if loop.time() + RETRY_PAUSE > deadline:
                log.error("usage rows lost at shutdown", extra={"rows": len(self._queued)})
                return
            await asyncio.sleep(RETRY_PAUSE)
