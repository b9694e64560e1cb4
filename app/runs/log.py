"""An in-memory, gap-free event log for one run, with live tailing.

The writer (the run's task) appends; any number of readers follow from any position.
A reader that falls behind receives everything that piled up as one batch, so a slow
or resuming client costs one wake-up, not one per event.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from app.domain.events import RunEvent, SequencedEvent


class RunLog:
    def __init__(self, run_id: str, *, first_seq: int = 1) -> None:
        self.run_id = run_id
        self._base = first_seq - 1  # seq of the event before the first one held here
        self.events: list[SequencedEvent] = []
        self._changed = asyncio.Event()
        self.closed = False

    @property
    def last_seq(self) -> int:
        return self._base + len(self.events)

    def append(self, event: RunEvent) -> SequencedEvent:
        if self.closed:
            raise RuntimeError(f"run {self.run_id} is finished; its log is closed")
        item = SequencedEvent(seq=self.last_seq + 1, event=event)
        self.events.append(item)
        self._wake()
        return item

    def close(self) -> None:
        self.closed = True
        self._wake()

    def _wake(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    def holds(self, after: int) -> bool:
        """Whether this log can serve a reader that has seen up to `after`."""
        return after >= self._base

    async def follow(self, after: int = 0) -> AsyncIterator[list[SequencedEvent]]:
        """Batches of events with seq > after, live, until the log closes."""
        position = max(after - self._base, 0)
        while True:
            if position < len(self.events):
                batch = self.events[position:]
                position = len(self.events)
                yield batch
                continue
            if self.closed:
                return
            await self._changed.wait()
