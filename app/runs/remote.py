"""Following a run that another instance runs, through a shared bus (`app.runs.relay`).

The reader subscribes to the run's topic first, then reads the durable log after its
position, then follows the live messages. Each event carries its sequence number, so:

- an event at or below the position was already given: dropped (duplicates);
- an event right after the position is given at once, with what it makes contiguous;
- an event further ahead is held while the hole before it is filled: the owner is asked
  to publish what came after the position again (`catchup`, answered from its memory in
  a millisecond or two) and the database is read, whichever comes first.

So the reader sees every event once, in order, and within milliseconds of the owner. When
nothing arrives for a while, or the bus reports a gap (its connection broke), the database
decides: it is the only source once the owner died (its runs are closed by another
instance's lease sweep) and after a restart.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable

from app.domain.events import RunStatus, SequencedEvent
from app.runs import kept_cancel
from app.runs.active import ActiveRun
from app.runs.bus import Bus, Message, Subscription
from app.runs.journal import RunJournal
from app.runs.kept_cancel import final_status, unreachable
from app.runs.relay import decode, run_topic
from app.store.records import RunRecord

# With no message for this long, the reader looks at the database (did the owner die?).
IDLE_SECONDS = 1.0
# While a hole is open, the owner is asked again and the database read this often.
HOLE_SECONDS = 0.05

Request = Callable[..., Awaitable[None]]


class Stitch:
    """A reader's position and the live events it holds ahead of a hole."""

    def __init__(self, position: int) -> None:
        self.position = position
        self.pending: dict[int, SequencedEvent] = {}
        self.ended = False

    def live(self, events: list[SequencedEvent]) -> list[SequencedEvent]:
        """Live events in: what is now contiguous with the position comes out."""
        for item in events:
            if item.seq > self.position:
                self.pending[item.seq] = item
        return self._contiguous()

    def stored(self, events: list[SequencedEvent]) -> list[SequencedEvent]:
        """Events from the database (its order is the truth, jumps included)."""
        fresh = [item for item in events if item.seq > self.position]
        if fresh:
            self.position = fresh[-1].seq
            self.ended = fresh[-1].type == "run_end"
            for seq in [s for s in self.pending if s <= self.position]:
                del self.pending[seq]
        return fresh if self.ended else fresh + self._contiguous()

    def _contiguous(self) -> list[SequencedEvent]:
        out: list[SequencedEvent] = []
        while not self.ended and (item := self.pending.pop(self.position + 1, None)):
            out.append(item)
            self.position = item.seq
            self.ended = item.type == "run_end"
        if self.ended:
            self.pending.clear()
        return out


async def ended_tail(
    journal: RunJournal, record: RunRecord | None, run_id: str, position: int
) -> list[SequencedEvent]:
    """What a reader at `position` still gets of a run that is no longer running."""
    last = await journal.events_after(run_id, position)
    if last or record is None or position <= record.last_seq:
        return last
    # The reader saw events a crash never persisted: give it the end. (A reader at
    # last_seq has seen run_end already: nothing is left.)
    tail = await journal.events_after(run_id, max(record.last_seq - 1, 0))
    if tail and tail[-1].type == "run_end" and tail[-1].seq > 0:
        return tail[-1:]
    return []


class RemoteFollower:
    def __init__(
        self,
        journal: RunJournal,
        bus: Bus,
        request: Request,
        local: Callable[[str], ActiveRun | None],
        stopping: Callable[[], bool],
    ) -> None:
        self._journal = journal
        self._bus = bus
        self._request = request
        self._local = local
        self._stopping = stopping

    async def follow(
        self, owner_id: str, run_id: str, conversation_id: str | None, after: int
    ) -> AsyncIterator[list[SequencedEvent]]:
        stitch = Stitch(after)
        async with self._bus.subscribe(run_topic(run_id)) as messages:
            sync, asked = True, 0.0
            while True:
                if sync:
                    async for batch in self._stored(owner_id, run_id, conversation_id, stitch):
                        yield batch
                    if stitch.ended or self._stopping():
                        return
                    live = self._local(run_id)
                    if live is not None:  # it runs here after all: memory is faster
                        async for batch in live.log.follow(stitch.position):
                            yield batch
                        return
                    await self._ask(run_id, stitch.position)
                    sync, asked = False, time.monotonic()
                message = await _next(messages, HOLE_SECONDS if stitch.pending else IDLE_SECONDS)
                if not isinstance(message, bytes):  # quiet for a while, or a gap
                    sync = True
                    continue
                batch = stitch.live(decode(message))
                if batch:
                    yield batch
                if stitch.ended:
                    return
                sync = bool(stitch.pending) and time.monotonic() - asked > HOLE_SECONDS

    async def _stored(
        self, owner_id: str, run_id: str, conversation_id: str | None, stitch: Stitch
    ) -> AsyncIterator[list[SequencedEvent]]:
        """Catch up from the database; at the end of a run that stopped, its end."""
        while batch := await self._journal.events_after(run_id, stitch.position):
            fresh = stitch.stored(batch)
            if fresh:
                yield fresh
            if stitch.ended:
                return
        record = await self._journal.get_run(owner_id, run_id, conversation_id)
        if record is None or record.status != "running":
            tail = await ended_tail(self._journal, record, run_id, stitch.position)
            if tail:
                yield tail
            stitch.ended = True

    async def _ask(self, run_id: str, position: int) -> None:
        with contextlib.suppress(Exception):  # no bus: the database fills the hole
            await self._request("catchup", run_id=run_id, after=position)

    async def cancel(self, owner_id: str, run_id: str, conversation_id: str | None) -> RunStatus:
        """Ask the instance that runs it to stop the run; its final status. The request is
        kept on the run's row before it is published, so a message the bus loses (the
        owner's connection was down) still reaches the owner: when its connection is back
        and at its next lease renewal. When the owner does not confirm in time, or the bus
        is down here, the answer is 503 `run_unreachable` (`app.runs.kept_cancel`)."""
        await self._journal.request_cancel(owner_id, run_id)
        async with self._bus.subscribe(run_topic(run_id)) as messages:
            try:
                await self._request("cancel", run_id=run_id, owner_id=owner_id)
            except Exception as exc:
                # The bus is down: the run stops when its owner next renews its lease.
                # Say so (503, retry) rather than fail as if the service had a bug.
                raise unreachable() from exc
            deadline = time.monotonic() + kept_cancel.CANCEL_WAIT_SECONDS
            while time.monotonic() < deadline:
                message = await _next(messages, kept_cancel.POLL_SECONDS)
                ended = not isinstance(message, bytes) or _ends(decode(message))
                if not ended:
                    continue
                found = await self._journal.get_run(owner_id, run_id, conversation_id)
                if found is None or found.status != "running":
                    return final_status(found)
        raise unreachable()


async def _next(messages: Subscription, wait: float) -> Message | None:
    """The next message, or None after `wait` seconds."""
    try:
        async with asyncio.timeout(wait):
            return await messages.get()
    except TimeoutError:
        return None


def _ends(batch: list[SequencedEvent]) -> bool:
    return any(item.type == "run_end" for item in batch)
