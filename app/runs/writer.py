"""Batched persistence of a run's events.

Per-token writes would make the database the cost of streaming, so events are buffered
and written in one statement when `batch_size` pile up, when `max_delay` has passed since
the oldest unwritten one, and always before the run's state changes hands (a pause for a
human, the end of the run) so that what a reader can resume from after a restart never
lags the run's final state.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from app.domain.events import SequencedEvent

log = logging.getLogger("chat_bff.runs")

Flush = Callable[[list[SequencedEvent]], Awaitable[None]]


class EventWriter:
    """`add` each event. A run's task appends to `buffer` itself and calls `added` only
    once the buffer reaches `due` (what `add` does, without a call per streamed token):
    below that, adding an event has nothing else to do."""

    def __init__(self, flush: Flush, *, batch_size: int = 256, max_delay: float = 1.0) -> None:
        self._flush = flush
        self._batch_size = batch_size
        self._max_delay = max_delay
        self.buffer: list[SequencedEvent] = []
        # The buffer's length from which `added` has work: the first event starts the
        # timer, then the batch's size writes it.
        self.due = 1
        self._timer: asyncio.TimerHandle | None = None
        self._pending: set[asyncio.Task[None]] = set()
        self._lock = asyncio.Lock()
        self.writes = 0

    def add(self, item: SequencedEvent) -> None:
        self.buffer.append(item)
        if len(self.buffer) >= self.due:
            self.added()

    def added(self) -> None:
        """The buffer reached `due`: write it when full, else time it from now."""
        if len(self.buffer) >= self._batch_size:
            self._spawn()
            return
        if self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self._max_delay, self._spawn)
        self.due = self._batch_size

    def _spawn(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self.due = 1
        if not self.buffer:
            return
        task = asyncio.get_running_loop().create_task(self._write(self._take()))
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    def _take(self) -> list[SequencedEvent]:
        batch, self.buffer = self.buffer, []
        self.due = 1
        return batch

    async def _write(self, batch: list[SequencedEvent]) -> None:
        # One writer at a time keeps batches in seq order in the table.
        async with self._lock:
            try:
                await self._flush(batch)
                self.writes += 1
            except Exception:
                # The run goes on; readers on this instance are served from memory. The
                # final flush retries whatever is still missing.
                log.exception("event batch write failed", extra={"events": len(batch)})
                self.buffer[:0] = batch
                self.due = 1  # the next event times or writes them again

    async def take_rest(self) -> list[SequencedEvent]:
        """Wait for writes in flight and hand over what is still buffered, unwritten.

        The run's end writes the rest in the same transaction as its final state.
        """
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self.due = 1
        if self._pending:
            await asyncio.gather(*list(self._pending), return_exceptions=True)
        return self._take()

    async def drain(self) -> None:
        """Write everything buffered and wait for writes in flight."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self.due = 1
        if self._pending:
            await asyncio.gather(*list(self._pending), return_exceptions=True)
        if self.buffer:
            await self._write(self._take())
