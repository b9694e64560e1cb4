"""Sets that grew with a burst of streams are rebuilt at their size once it ended:
the same entries, the same objects, a table their size instead of the burst's."""

from __future__ import annotations

import asyncio
import sys
import weakref
from typing import Any

from app.observability.memory import Trimmer, compact, task_registry


class Item:
    pass


def test_a_set_grown_by_a_burst_is_rebuilt_at_its_size_with_the_same_entries() -> None:
    table = set(range(20_000))
    for i in range(3, 20_000):
        table.discard(i)
    grown = sys.getsizeof(table)
    assert compact([table]) == 1
    assert table == {0, 1, 2}
    assert sys.getsizeof(table) * 50 < grown


def test_a_weak_set_keeps_its_live_entries_and_still_drops_the_dead() -> None:
    kept = [Item() for _ in range(3)]
    burst = [Item() for _ in range(20_000)]
    table: weakref.WeakSet[Item] = weakref.WeakSet([*kept, *burst])
    del burst
    grown = sys.getsizeof(table.data)  # type: ignore[attr-defined]
    assert compact([table]) == 1
    assert set(table) == set(kept)
    assert sys.getsizeof(table.data) * 50 < grown  # type: ignore[attr-defined]
    kept.pop()
    assert len(table) == 2  # the weak references' callbacks still reach the table


def test_a_weak_set_being_iterated_and_small_or_full_tables_are_left_alone() -> None:
    items = [Item() for _ in range(20_000)]
    iterated: weakref.WeakSet[Item] = weakref.WeakSet(items)
    walking = iter(iterated)
    next(walking)
    del items[10:]
    small = {1, 2, 3}
    full = set(range(20_000))
    assert compact([iterated, small, full]) == 0
    del walking


async def test_the_trimmer_rebuilds_a_table_once_a_burst_has_left_it() -> None:
    table = set(range(20_000))
    grown = sys.getsizeof(table)
    checked = asyncio.Event()

    def tables() -> list[Any]:
        checked.set()
        return [table]

    async def checks(n: int) -> None:
        for _ in range(n):
            checked.clear()
            await asyncio.wait_for(checked.wait(), 30)

    trimmer = Trimmer(free_mb=0, every_seconds=0.01, allocator=None, tables=tables)
    trimmer.start()
    try:
        await checks(2)
        assert sys.getsizeof(table) == grown  # the burst is open: its table is its size
        table.difference_update(range(3, 20_000))
        await checks(2)
    finally:
        await trimmer.stop()
    assert table == {0, 1, 2}
    assert sys.getsizeof(table) < 1024


async def test_asyncio_registry_of_tasks_is_found() -> None:
    registry = task_registry()
    assert len(registry) == 1
    assert asyncio.current_task() in registry[0]
