"""After a burst, the C free lists no longer keep the burst's own objects (and their pages)."""

from __future__ import annotations

import asyncio
import linecache
import sys
import tracemalloc
from collections.abc import Iterator
from typing import Any

import uvloop

from app.observability.free_lists import FreeListReserve


def _burst_of_iterators(future: asyncio.Future[None], n: int) -> list[Iterator[Any]]:
    return [future.__await__() for _ in range(n)]


def _burst_of_handles(loop: asyncio.AbstractEventLoop, n: int) -> list[asyncio.Handle]:
    return [loop.call_soon(lambda: None) for _ in range(n)]


def _held(snapshot: tracemalloc.Snapshot, made_by: str, like: object) -> int:
    """Objects of `like`'s size still allocated that a line holding `made_by` made (the
    same lines also grow the loop's queue, whose blocks the queue keeps a few of)."""
    size = sys.getsizeof(like)
    return sum(
        1
        for trace in snapshot.traces
        if trace.size == size
        and any(made_by in linecache.getline(f.filename, f.lineno) for f in trace.traceback)
    )


async def _burst_then_refresh(refresh: bool) -> tuple[int, int]:
    reserve = FreeListReserve()
    await asyncio.sleep(0)  # the loop lets go of the reserve's handles
    loop = asyncio.get_running_loop()
    future = loop.create_future()
    tracemalloc.start(1)
    try:
        iterators = _burst_of_iterators(future, 2000)
        handles = _burst_of_handles(loop, 2000)
        del iterators, handles
        await asyncio.sleep(0)  # the handles run; the lists keep the last of them
        await asyncio.sleep(0)
        if refresh:
            await reserve.refresh()
        snapshot = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    return (
        _held(snapshot, "future.__await__() for _", future.__await__()),
        _held(snapshot, "loop.call_soon(lambda: None) for _", loop.call_soon(lambda: None)),
    )


def test_a_burst_of_awaits_and_wake_ups_leaves_nothing_of_its_own_in_the_free_lists() -> None:
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        held = runner.run(_burst_then_refresh(refresh=False))
        assert held[0] >= 200 and held[1] >= 200  # what the free lists keep without it
        assert runner.run(_burst_then_refresh(refresh=True)) == (0, 0)
