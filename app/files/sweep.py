"""Bytes no file row names are removed: an upload whose blob was written but whose row
never committed (the process died between the two, the request was cancelled there, the
database was out of reach when it would have said) left them for good.

A blob is only ever removed when it was last written more than `grace` ago and no row
names it then. Every blob is written before its row is recorded, and the row is recorded
within the upload's own time (`UPLOAD_TIMEOUT_SECONDS`, extraction, one transaction), far
under the grace: a blob whose row may still be committing is never old enough. A write
left unfinished (`.part`) that long goes too (`FileStore.old_keys`).

A pass runs at start-up and then every `interval`, each over at most `PASS_KEYS` blobs
in batches of `BATCH` (one SELECT on the primary key per batch); a cursor carries on
where the last pass stopped, so a large store is walked a bounded slice at a time. A pass
that fails (the database out of reach) is logged and tried again at the next interval.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from app.files.store import FileStore
from app.store.database import Database

log = logging.getLogger("chat_bff.files")

BATCH = 500
PASS_KEYS = 10_000


class StraySweeper:
    def __init__(
        self,
        db: Database,
        store: FileStore,
        *,
        grace_seconds: float,
        interval_seconds: float,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._db = db
        self._store = store
        self._grace = grace_seconds
        self._interval = interval_seconds
        self._clock = clock
        self._cursor: str | None = None
        self._task: asyncio.Task[None] | None = None
        self.first_pass = asyncio.Event()  # set once the start-up pass is over

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name="stray sweep")

    async def aclose(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    async def sweep(self) -> int:
        """One pass: the number of blobs removed."""
        before = self._clock() - self._grace
        removed = seen = 0
        while seen < PASS_KEYS:
            keys = await self._store.old_keys(before, BATCH, self._cursor)
            self._cursor = keys[-1] if len(keys) == BATCH else None
            seen += len(keys)
            if keys:
                async with self._db.read() as tx:
                    known = await tx.files.known_keys(keys)
                for key in (k for k in keys if k not in known):
                    await self._store.delete(key)
                    removed += 1
            if self._cursor is None:
                break
        if removed:
            log.info("stray file bytes removed", extra={"blobs": removed})
        return removed

    async def _run(self) -> None:
        while True:
            try:
                await self.sweep()
            except Exception:  # the next pass tries again
                log.warning("stray file sweep failed", exc_info=True)
            self.first_pass.set()
            await asyncio.sleep(self._interval)
