"""Freed heap goes back to the system once a burst has left enough of it."""

from __future__ import annotations

import asyncio
import linecache
import sys
import tracemalloc
from collections.abc import Callable

import pytest

from app.api.drain import Drain
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


class GlibcHeap:
    """Free bytes as glibc's `mallinfo2` counts them: a trim does not lower the figure."""

    def __init__(self, free_mb: float) -> None:
        self.free = int(free_mb * 1024 * 1024)
        self.calls: list[str] = []

    def burst_ends(self, free_mb: float) -> None:
        self.free = int(free_mb * 1024 * 1024)

    def trimmer(self) -> Trimmer:
        return Trimmer(
            free_mb=8,
            collect_mb=32,
            every_seconds=0.01,
            allocator=(lambda: self.free, lambda: self.calls.append("trim")),
            collect=lambda: self.calls.append("collect"),
        )

    async def checks(self, n: int) -> None:
        start = self.calls.count("trim")
        while self.calls.count("trim") < start + n:
            await asyncio.sleep(0.005)


async def test_a_heap_a_burst_left_mostly_free_has_the_free_lists_emptied_before_the_trim() -> None:
    heap = GlibcHeap(free_mb=2)
    trimmer = heap.trimmer()
    trimmer.start()
    try:
        heap.burst_ends(free_mb=100)
        await asyncio.wait_for(heap.checks(1), 30)
    finally:
        await trimmer.stop()
    assert heap.calls[:2] == ["collect", "trim"]


async def test_a_burst_is_collected_once_though_the_heap_stays_counted_free() -> None:
    heap = GlibcHeap(free_mb=2)
    trimmer = heap.trimmer()
    trimmer.start()
    try:
        heap.burst_ends(free_mb=100)
        await asyncio.wait_for(heap.checks(5), 30)
        assert heap.calls.count("collect") == 1  # trimmed at every check, collected once
        heap.burst_ends(free_mb=10)  # the next burst takes the memory again ...
        await asyncio.wait_for(heap.checks(2), 30)
        heap.burst_ends(free_mb=100)  # ... and leaves it: collected again
        await asyncio.wait_for(heap.checks(2), 30)
    finally:
        await trimmer.stop()
    assert heap.calls.count("collect") == 2


async def test_a_heap_already_free_at_start_up_is_not_collected() -> None:
    heap = GlibcHeap(free_mb=100)
    trimmer = heap.trimmer()
    trimmer.start()
    try:
        await asyncio.wait_for(heap.checks(3), 30)
    finally:
        await trimmer.stop()
    assert "collect" not in heap.calls


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


class Streams:
    """The service's SSE responses as the trimmer sees them: (open now, closed so far)."""

    def __init__(self) -> None:
        self.open = 0
        self.closed = 0
        self.collections = 0
        self.checked = asyncio.Event()

    def __call__(self) -> tuple[int, int]:
        self.checked.set()
        return self.open, self.closed

    def collect(self) -> None:
        self.collections += 1

    def trimmer(self) -> Trimmer:
        # No glibc heap: collecting after a burst needs none.
        return Trimmer(
            free_mb=0, every_seconds=0.01, streams=self, collect=self.collect, allocator=None
        )

    async def checks(self, n: int) -> None:
        for _ in range(n):
            self.checked.clear()
            await asyncio.wait_for(self.checked.wait(), 30)


async def test_an_ended_burst_of_streams_is_collected_once_with_no_heap_to_trim() -> None:
    streams = Streams()
    trimmer = streams.trimmer()
    trimmer.start()
    try:
        streams.open = 1000  # a burst opens ...
        await streams.checks(2)
        streams.open, streams.closed = 40, 960  # ... and ends: its cycles wait for a collection
        await streams.checks(3)
    finally:
        await trimmer.stop()
    assert streams.collections == 1


@pytest.mark.parametrize(
    ("open_now", "closed"),
    [
        (3000, 600),  # steady load: a full collection would stall every open stream
        (0, 100),  # a burst too small to be worth one
    ],
)
async def test_no_collection_while_most_streams_are_open_or_few_have_closed(
    open_now: int, closed: int
) -> None:
    streams = Streams()
    trimmer = streams.trimmer()
    trimmer.start()
    try:
        streams.open, streams.closed = open_now, closed
        await streams.checks(3)
    finally:
        await trimmer.stop()
    assert streams.collections == 0


def test_the_drain_counts_the_streams_that_ended() -> None:
    drain = Drain()
    for _ in range(3):
        drain.stream_opened()
    drain.stream_closed()
    drain.stream_closed()

    assert (drain.open_streams, drain.closed_streams) == (1, 2)


async def test_the_next_burst_is_collected_when_it_ends_too() -> None:
    streams = Streams()
    trimmer = streams.trimmer()
    trimmer.start()
    try:
        streams.closed = 500
        await streams.checks(2)
        streams.open = 400  # the next burst: 400 open, 0 closed since the collection
        await streams.checks(2)
        assert streams.collections == 1
        streams.open, streams.closed = 0, 900
        await streams.checks(2)
    finally:
        await trimmer.stop()
    assert streams.collections == 2


class Zone:
    def dst(self) -> None:
        return None


def _names_looked_up(n: int) -> None:
    """As C code looking an attribute up by a C string does: a new name string each time."""
    names = ["".join(("d", "st")) for _ in range(n)]
    zone = Zone()
    for name in names:
        getattr(zone, name)


async def test_an_ended_burst_has_the_free_lists_refreshed_once() -> None:
    streams = Streams()
    refreshed: list[int] = []

    async def refresh() -> None:
        refreshed.append(streams.collections)

    trimmer = Trimmer(
        free_mb=0, every_seconds=0.01, streams=streams, collect=streams.collect, free_lists=refresh
    )
    trimmer.start()
    try:
        streams.open = 1000
        await streams.checks(2)
        assert refreshed == []  # not while the burst is open
        streams.open, streams.closed = 0, 1000
        await streams.checks(3)
    finally:
        await trimmer.stop()
    assert refreshed == [1]  # once, after the burst's collection


async def test_an_ended_burst_leaves_none_of_its_looked_up_names_kept() -> None:
    streams = Streams()
    tracemalloc.start(1)
    try:
        _names_looked_up(2000)
        kept = _kept_names(tracemalloc.take_snapshot())
        assert kept > 100  # what CPython's attribute cache holds on to
        trimmer = streams.trimmer()
        trimmer.start()
        try:
            streams.open, streams.closed = 0, 1000  # a burst ended
            await streams.checks(3)
        finally:
            await trimmer.stop()
        assert _kept_names(tracemalloc.take_snapshot()) == 0
    finally:
        tracemalloc.stop()


def _kept_names(snapshot: tracemalloc.Snapshot) -> int:
    size = sys.getsizeof("dst")
    return sum(
        1
        for trace in snapshot.traces
        if trace.size == size
        and any(
            '"".join(("d", "st"))' in linecache.getline(f.filename, f.lineno)
            for f in trace.traceback
        )
    )
