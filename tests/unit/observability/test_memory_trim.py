"""Freed heap goes back to the system once a burst has left enough of it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from app.observability.memory import Trimmer


class FakeHeap:
    def __init__(self, free_mb: float) -> None:
        self.free = int(free_mb * 1024 * 1024)
        self.trimmed = asyncio.Event()

    def allocator(self) -> tuple[Callable[[], int], Callable[[], object]]:
        loop = asyncio.get_running_loop()

        def trim() -> None:  # runs in a worker thread, as malloc_trim does
            self.free = 0
            loop.call_soon_threadsafe(self.trimmed.set)

        return (lambda: self.free), trim


async def test_a_heap_holding_more_than_the_threshold_free_is_trimmed() -> None:
    heap = FakeHeap(free_mb=100)
    trimmer = Trimmer(free_mb=32, every_seconds=0.01, allocator=heap.allocator())
    trimmer.start()
    try:
        await asyncio.wait_for(heap.trimmed.wait(), 30)
    finally:
        await trimmer.stop()
    assert heap.free == 0


async def test_a_heap_with_little_free_is_left_alone() -> None:
    calls: list[int] = []
    trimmer = Trimmer(
        free_mb=32, every_seconds=0.01, allocator=(lambda: 1024 * 1024, lambda: calls.append(1))
    )
    trimmer.start()
    await asyncio.sleep(0.2)
    await trimmer.stop()
    assert calls == []


async def test_a_heap_a_burst_left_mostly_free_has_the_free_lists_emptied_before_the_trim() -> None:
    heap = FakeHeap(free_mb=100)
    calls: list[str] = []
    free, trim = heap.allocator()

    def trim_after_collect() -> None:
        calls.append("trim")
        trim()

    trimmer = Trimmer(
        free_mb=8,
        collect_mb=32,
        every_seconds=0.01,
        allocator=(free, trim_after_collect),
        collect=lambda: calls.append("collect"),
    )
    trimmer.start()
    try:
        await asyncio.wait_for(heap.trimmed.wait(), 30)
    finally:
        await trimmer.stop()
    assert calls[:2] == ["collect", "trim"]


async def test_a_heap_with_a_little_free_is_trimmed_without_a_collection() -> None:
    heap = FakeHeap(free_mb=16)
    collections: list[int] = []
    trimmer = Trimmer(
        free_mb=8,
        collect_mb=32,
        every_seconds=0.01,
        allocator=heap.allocator(),
        collect=lambda: collections.append(1),
    )
    trimmer.start()
    try:
        await asyncio.wait_for(heap.trimmed.wait(), 30)
    finally:
        await trimmer.stop()
    assert collections == []
