"""Batched event persistence: few writes, in order, nothing lost when a write fails."""

from __future__ import annotations

import asyncio

from app.domain.events import SequencedEvent, TextDeltaEvent
from app.runs.writer import EventWriter


def item(seq: int) -> SequencedEvent:
    return SequencedEvent(
        seq=seq, event=TextDeltaEvent(run_id="run_1", message_id="msg_1", delta=str(seq))
    )


class Table:
    """A fake flush target; `fail` makes the next N writes raise."""

    def __init__(self, fail: int = 0) -> None:
        self.batches: list[list[int]] = []
        self.fail = fail

    async def flush(self, batch: list[SequencedEvent]) -> None:
        await asyncio.sleep(0)
        if self.fail:
            self.fail -= 1
            raise ConnectionError("database went away")
        self.batches.append([i.seq for i in batch])

    @property
    def rows(self) -> list[int]:
        return [seq for batch in self.batches for seq in batch]


async def test_a_full_batch_is_written_in_one_statement() -> None:
    table = Table()
    writer = EventWriter(table.flush, batch_size=10, max_delay=60)

    for seq in range(1, 26):
        writer.add(item(seq))
    await writer.drain()

    assert table.batches == [list(range(1, 11)), list(range(11, 21)), list(range(21, 26))]
    assert writer.writes == 3


async def test_a_partial_batch_is_written_after_the_delay() -> None:
    table = Table()
    writer = EventWriter(table.flush, batch_size=100, max_delay=0.01)

    writer.add(item(1))
    writer.add(item(2))
    for _ in range(500):
        if table.rows:
            break
        await asyncio.sleep(0.01)

    assert table.batches == [[1, 2]]


async def test_drain_writes_whatever_is_buffered() -> None:
    table = Table()
    writer = EventWriter(table.flush, batch_size=100, max_delay=60)
    for seq in range(1, 4):
        writer.add(item(seq))

    await writer.drain()

    assert table.rows == [1, 2, 3]


async def test_a_failed_write_is_retried_by_drain_in_order() -> None:
    table = Table(fail=1)
    writer = EventWriter(table.flush, batch_size=3, max_delay=60)
    for seq in range(1, 4):
        writer.add(item(seq))  # a full batch: its write fails
    while table.fail:
        await asyncio.sleep(0.001)
    await asyncio.sleep(0)
    writer.add(item(4))

    await writer.drain()

    assert table.rows == [1, 2, 3, 4]
