"""Reading a run's events: from memory when this process runs (or just ran) it, from the
database when another instance does or a restart came in between.

First read and resume are one code path: `follow(after=N)` gives exactly the events with
a sequence number above N, replayed and then live, until the run's `run_end`.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

from app.domain.errors import NotFound
from app.domain.events import SequencedEvent
from app.runs.active import ActiveRun
from app.runs.journal import RunJournal

# How often a reader of a run on another instance looks for newly stored events.
POLL_SECONDS = 0.25


class RunReader:
    def __init__(
        self,
        journal: RunJournal,
        local: Callable[[str], ActiveRun | None],
        stopping: Callable[[], bool],
    ) -> None:
        self._journal = journal
        self._local = local
        self._stopping = stopping

    def _mine(self, owner_id: str, run_id: str, conversation_id: str | None) -> ActiveRun | None:
        run = self._local(run_id)
        if (
            run is not None
            and run.owner_id == owner_id
            and (conversation_id is None or run.conversation_id == conversation_id)
        ):
            return run
        return None

    async def position(
        self, owner_id: str, run_id: str, conversation_id: str | None
    ) -> tuple[bool, int]:
        """(finished, last seq) of the caller's run; NotFound for a missing or foreign one."""
        run = self._mine(owner_id, run_id, conversation_id)
        if run is not None:
            return run.log.closed, run.log.last_seq
        record = await self._journal.get_run(owner_id, run_id, conversation_id)
        if record is None:
            raise NotFound("Run not found.")
        return record.status != "running", record.last_seq

    async def follow(
        self, owner_id: str, run_id: str, *, conversation_id: str | None, after: int = 0
    ) -> AsyncIterator[list[SequencedEvent]]:
        """Batches of events after `after`: replayed, then live, until the run ends."""
        run = self._mine(owner_id, run_id, conversation_id)
        if run is not None:
            async for batch in run.log.follow(after):
                yield batch
            return
        if await self._journal.get_run(owner_id, run_id, conversation_id) is None:
            raise NotFound("Run not found.")
        async for batch in self._stored(owner_id, run_id, conversation_id, after):
            yield batch

    async def _stored(
        self, owner_id: str, run_id: str, conversation_id: str | None, position: int
    ) -> AsyncIterator[list[SequencedEvent]]:
        """Poll the stored log until the run's `run_end` is stored (another instance runs
        it), switching to memory if the run turns out to live here after all."""
        while True:
            batch = await self._journal.events_after(run_id, position)
            if batch:
                position = batch[-1].seq
                yield batch
                if batch[-1].event.type == "run_end":
                    return
                continue
            state = await self._journal.get_run(owner_id, run_id, conversation_id)
            if state is None or state.status != "running":
                last = await self._journal.events_after(run_id, position)
                if last:
                    yield last
                elif state is not None and position > state.last_seq:
                    # The reader saw events a crash never persisted: give it the end. (A
                    # reader at last_seq has seen run_end already: nothing is left.)
                    tail = await self._journal.events_after(run_id, max(state.last_seq - 1, 0))
                    if tail and tail[-1].event.type == "run_end" and tail[-1].seq > 0:
                        yield tail[-1:]
                return
            live = self._local(run_id)
            if live is not None:
                async for live_batch in live.log.follow(position):
                    yield live_batch
                return
            if self._stopping():
                return  # shutting down: the reader resumes on another instance
            await asyncio.sleep(POLL_SECONDS)
