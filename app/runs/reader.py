"""Reading a run's events: from memory when this process runs (or just ran) it, from the
database when another instance does or a restart came in between (live through a shared
bus when there is one, `app.runs.remote`; polling the database when there is none).

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
from app.runs.remote import RemoteFollower, ended_tail

# How often a reader of a run on another instance looks for newly stored events.
POLL_SECONDS = 0.25


class RunReader:
    def __init__(
        self,
        journal: RunJournal,
        local: Callable[[str], ActiveRun | None],
        stopping: Callable[[], bool],
        remote: RemoteFollower | None = None,
    ) -> None:
        self._journal = journal
        self._local = local
        self._stopping = stopping
        self._remote = remote

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
        if run is not None and await self._still_stored(run, owner_id):
            return run.log.closed, run.log.last_seq
        record = await self._journal.get_run(owner_id, run_id, conversation_id)
        if record is None:
            raise NotFound("Run not found.")
        return record.status != "running", record.last_seq

    async def _still_stored(self, run: ActiveRun, owner_id: str) -> bool:
        """Whether a finished conversation run held in memory may still be served. With
        other instances, a purge through one of them reaches this one's memory by a
        message (`forget`) that may come after the next read, or never (pub/sub is at
        most once): the database decides, at one read of the run's row."""
        if self._remote is None or not run.log.closed or run.conversation_id is None:
            return True
        stored = await self._journal.get_run(owner_id, run.run_id, run.conversation_id)
        return stored is not None

    async def follow(
        self, owner_id: str, run_id: str, *, conversation_id: str | None, after: int = 0
    ) -> AsyncIterator[list[SequencedEvent]]:
        """Batches of events after `after`: replayed, then live, until the run ends."""
        run = self._mine(owner_id, run_id, conversation_id)
        if run is not None and await self._still_stored(run, owner_id):
            async for batch in run.log.follow(after):
                yield batch
            return
        if await self._journal.get_run(owner_id, run_id, conversation_id) is None:
            raise NotFound("Run not found.")
        if self._remote is not None:
            followed = self._remote.follow(owner_id, run_id, conversation_id, after)
        else:
            followed = self._stored(owner_id, run_id, conversation_id, after)
        async for batch in followed:
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
                if batch[-1].type == "run_end":
                    return
                continue
            state = await self._journal.get_run(owner_id, run_id, conversation_id)
            if state is None or state.status != "running":
                tail = await ended_tail(self._journal, state, run_id, position)
                if tail:
                    yield tail
                return
            live = self._local(run_id)
            if live is not None:
                async for live_batch in live.log.follow(position):
                    yield live_batch
                return
            if self._stopping():
                return  # shutting down: the reader resumes on another instance
            await asyncio.sleep(POLL_SECONDS)
