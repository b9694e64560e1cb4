"""An in-memory, gap-free event log for one run, with live tailing.

The writer (the run's task) appends; any number of readers follow from any position.
A reader that falls behind receives everything that piled up as one batch, so a slow
or resuming client costs one wake-up, not one per event. A run with one reader only (a
stateless stream) lets that reader release what it took, so memory per open stream does
not grow with the answer.

Memory: a run's log lives as long as its stream, so it holds no `asyncio.Event` (an
object, its attribute dict and a 528-byte deque block, plus the `wait` coroutine of each
parked reader): a parked reader waits on a future of its own, kept in a list only while
it waits, and `__slots__` leaves out the attribute dict.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from app.domain.events import RunEvent, SequencedEvent

# What an event held as JSON alone costs besides its JSON: the `SequencedEvent`, the bytes
# object's header and the list's slot (tracemalloc: about 113 + 33 bytes).
HELD_EVENT_OVERHEAD = 150


class RunLog:
    __slots__ = ("_base", "_parked", "closed", "events", "run_id")

    def __init__(self, run_id: str, *, first_seq: int = 1) -> None:
        self.run_id = run_id
        self._base = first_seq - 1  # seq of the event before the first one held here
        self.events: list[SequencedEvent] = []
        self._parked: list[asyncio.Future[None]] | None = None  # readers waiting for more
        self.closed = False

    @property
    def last_seq(self) -> int:
        return self._base + len(self.events)

    @property
    def readers_waiting(self) -> bool:
        """Whether a reader is parked for the next event (the last append woke it, and it
        has not run since)."""
        return bool(self._parked)

    def append(self, event: RunEvent) -> SequencedEvent:
        if self.closed:
            raise RuntimeError(f"run {self.run_id} is finished; its log is closed")
        events = self.events
        item = SequencedEvent(seq=self._base + len(events) + 1, event=event)
        events.append(item)
        if self._parked:  # checked inline: this runs once per streamed token
            self._wake()
        return item

    def close(self) -> None:
        self.closed = True
        self._wake()

    def keep_json_only(self) -> int:
        """For a finished log kept for late readers: each event as its JSON alone, the
        bytes a replay sends (the native stream's as they are, other wires' parsed again
        as from the database), so the log keeps about a third of what it held. Returns
        about what the log holds then (the JSON and `HELD_EVENT_OVERHEAD` an event)."""
        held = SequencedEvent.keep_json_only_all(self.events)
        return held + HELD_EVENT_OVERHEAD * len(self.events)

    def held_bytes(self) -> int:
        """About what a log kept as JSON alone holds (`keep_json_only`)."""
        texts = SequencedEvent.jsons(self.events)
        return sum(map(len, texts)) + HELD_EVENT_OVERHEAD * len(self.events)

    def _wake(self) -> None:
        # Most appends find the reader busy sending the last batch: nothing to wake (the
        # profile showed a wake-up per token costs). A woken reader stays listed until it
        # runs (`readers_waiting`), and takes itself off.
        if self._parked:
            for waiter in self._parked:
                if not waiter.done():
                    waiter.set_result(None)

    def _park(self) -> asyncio.Future[None]:
        """A future the next append or close resolves; a cancelled reader cancels only
        its own (awaited in `follow` itself: no coroutine per parked reader)."""
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        if self._parked is None:
            self._parked = [waiter]
        else:
            self._parked.append(waiter)
        return waiter

    def _unpark(self, waiter: asyncio.Future[None]) -> None:
        if self._parked is not None:
            self._parked.remove(waiter)
            if not self._parked:
                self._parked = None

    def holds(self, after: int) -> bool:
        """Whether this log can serve a reader that has seen up to `after`."""
        return after >= self._base

    def since(self, after: int) -> list[SequencedEvent]:
        """The events held here with seq > after."""
        return self.events[max(after - self._base, 0) :]

    async def follow(
        self, after: int = 0, *, release: bool = False
    ) -> AsyncIterator[list[SequencedEvent]]:
        """Batches of events with seq > after, live, until the log closes.

        `release=True` is for the run's only reader (a stateless stream): each batch is
        dropped from the log once the reader comes back for the next, so a long answer
        holds only what has not been sent yet, whatever its length.
        """
        seen = max(after, self._base)
        while True:
            if seen < self.last_seq:
                batch = self.events[seen - self._base :]
                seen = self.last_seq
                yield batch
                if release:
                    self._release(seen)
                continue
            if self.closed:
                return
            waiter = self._park()
            try:
                await waiter
            finally:
                self._unpark(waiter)

    def _release(self, upto: int) -> None:
        """Drop the events with seq <= upto; readers behind that can no longer be served
        from here (`holds` says so)."""
        drop = min(upto - self._base, len(self.events))
        if drop > 0:
            del self.events[:drop]
            self._base += drop
