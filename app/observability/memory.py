"""Giving freed memory back to the system after a burst of streams (glibc only).

Why: glibc's `free()` returns memory to the system only from the top of its heap; what a
burst of streams freed in the middle stays resident (`bench.memory` saw 15-20 MB of free
heap kept after 1,000 streams closed, and with `PYTHONMALLOC=malloc`, where every Python
object comes from glibc, over 100 MB). `malloc_trim(0)` hands every free page back. It
walks the heap, so it runs only when glibc holds more than `free_mb` free, checked every
`every_seconds`, in a worker thread (it takes the allocator's locks, not the event loop).
The threshold is 8 MB: at the earlier 32 MB, the 6-14 MB a burst of 300-1,000 streams
left free were never returned (`bench.memory --probe`); a trim of a fragmented heap
holds the allocator for 10-50 ms, at most once per check.
Elsewhere (musl, macOS) there is no `malloc_trim` and this does nothing.

When more than `collect_mb` (32 MB) is free, a full garbage collection runs first: it
empties CPython's free lists (the tuples, floats, dicts, contexts and async generator
steps it keeps for reuse), whose entries, scattered over the heap, keep pages that are
otherwise free from being returned. With `PYTHONMALLOC=malloc` after 1,000 streams closed
(`bench.memory`): 179 MB resident after the trim alone, 160 MB with the collection before
it (149.6 MB before the load); the collection found no garbage there: it was the free
lists. It runs in the event loop and walks only the objects made since start-up (those
are frozen), so it runs only when a burst has just ended: when the free heap has grown by
more than `collect_mb` since its lowest point after the previous collection. glibc counts
trimmed pages as free still, so "more than 32 MB free" alone stays true after the first
burst, and held thousands of later open streams (2 million objects, 1-4 s a collection)
to a full collection every check.

A burst of streams that has ended is collected too, whatever the free heap says: a
stream a client hung up on leaves its state in reference cycles (the cancelled task, its
`CancelledError`, the traceback's frames and their locals, the run they hold), about 170
objects that only a full collection frees (`bench.memory --probe`: 172,631 objects freed
by one after 1,000 streams closed). While serving, full collections are rare (see
`serving_collector`) and an idle worker allocates nothing that would bring one on, so
after 5,000 streams closed under load RSS stayed at three times its starting figure. So
when at least `burst_streams` (256) streams have closed since the last such collection
and no more than a quarter as many are still open, one runs: it walks the few streams
still open plus the garbage, at most once per four closed streams per open one.

pymalloc's own arenas (1 MiB each, where small Python objects live by default) go back to
the system only when empty; a few objects that outlive a burst keep arenas resident, and
no call changes that. See the README's Benchmarks for what each allocator returns.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import gc
import logging
import sys
import weakref
from collections.abc import Awaitable, Callable, Iterable, Iterator
from typing import Any

log = logging.getLogger("chat_bff.memory")


# A table smaller than this is left as it is (`compact`): 512 entries' worth of a set.
_COMPACT_FROM_BYTES = 16 * 1024

# Young-generation threshold while serving (CPython's default is 700); see below.
YOUNG_COLLECTION_EVERY = 50_000


@contextlib.contextmanager
def serving_collector() -> Iterator[None]:
    """The garbage collector's settings while the service runs; restored afterwards.

    Start-up leaves hundreds of thousands of long-lived objects (modules, SDK clients,
    pydantic schemas, the service graph): frozen after one collection, no later pass walks
    them again (150-172 -> 118-144 ms CPU per 1,000 streamed chunks, `bench.run --quick`).

    Open streams are the rest of the heap: ~400 tracked objects each, 2 million at 5,000
    streams. With CPython's default young threshold (700) a full collection is due every
    ~70,000 net allocations once the old generation has grown by a quarter, so opening
    5,000 streams ran about eight of them, each walking every open stream with the event
    loop stopped: 1-5 s apiece on 2 shared cores (`gc.callbacks`, `bench.memory --counts
    5000`). Upstream connects (about five loop turns each) then outlived their 10 s
    timeout by the thousand; every timeout left a cancelled anyio scope redelivering its
    cancellation each loop turn until its task ran again, and the SDK retried every one:
    the worker spun and most streams failed with `provider_timeout`. At 50,000 a full
    collection is due only every ~6 million net allocations (none while the streams
    open), and a young collection walks at most what was allocated since the last one.
    Cyclic garbage still goes at the next young collection when it dies young.

    Unfrozen and reset at shutdown, for processes that build many apps (tests).
    """
    previous = gc.get_threshold()
    gc.collect()
    gc.freeze()
    gc.set_threshold(YOUNG_COLLECTION_EVERY, *previous[1:])
    try:
        yield
    finally:
        gc.set_threshold(*previous)
        gc.unfreeze()


class MallInfo2(ctypes.Structure):
    """glibc's `struct mallinfo2`: the heap's sizes in bytes."""

    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena",
            "ordblks",
            "smblks",
            "hblks",
            "hblkhd",
            "usmblks",
            "fsmblks",
            "uordblks",
            "fordblks",
            "keepcost",
        )
    ]


def glibc_heap() -> tuple[Callable[[], MallInfo2], Callable[[], object]] | None:
    """(glibc's `mallinfo2`, `malloc_trim(0)`) where glibc has both; None elsewhere."""
    try:
        libc = ctypes.CDLL("libc.so.6")
        mallinfo2 = libc.mallinfo2
        trim = libc.malloc_trim
    except (OSError, AttributeError):
        return None
    mallinfo2.restype = MallInfo2
    trim.argtypes = [ctypes.c_size_t]
    return mallinfo2, (lambda: trim(0))


def task_registry() -> list[Table]:
    """asyncio's registry of live tasks, a weak set (`_all_tasks` in CPython 3.11,
    `_scheduled_tasks` from 3.12); empty where it is neither."""
    for name in ("_scheduled_tasks", "_all_tasks"):
        found = getattr(asyncio.tasks, name, None)
        if isinstance(found, weakref.WeakSet):
            return [found]
    return []


def _glibc() -> tuple[Callable[[], int], Callable[[], object]] | None:
    """(free bytes in the heap, trim) where glibc has both; None elsewhere."""
    found = glibc_heap()
    if found is None:
        return None
    mallinfo2, trim = found
    return (lambda: int(mallinfo2().fordblks)), trim


class Trimmer:
    def __init__(
        self,
        *,
        free_mb: float = 8.0,
        collect_mb: float = 32.0,
        every_seconds: float = 30.0,
        allocator: tuple[Callable[[], int], Callable[[], object]] | None = None,
        collect: Callable[[], object] = gc.collect,
        streams: Callable[[], tuple[int, int]] | None = None,
        burst_streams: int = 256,
        tables: Callable[[], Iterable[Table]] | None = None,
        free_lists: Callable[[], Awaitable[object]] | None = None,
    ) -> None:
        self._free = int(free_mb * 1024 * 1024)
        self._collect_above = int(collect_mb * 1024 * 1024)
        self._collect = collect
        self._every = every_seconds
        self._glibc = allocator or _glibc()
        if self._free <= 0:
            self._glibc = None
        self._streams = streams  # (open now, closed since start-up)
        self._burst = burst_streams
        self._tables = tables  # the sets that grow with the open streams, compacted each check
        # Emptied after a burst's collection (app/observability/free_lists.py).
        self._free_lists = free_lists
        self._closed_at_collection = 0
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self._glibc is None and self._streams is None and self._tables is None:
            return
        # The least free heap since the last collection: start-up's, to begin with.
        low = self._glibc[0]() if self._glibc is not None else 0
        if self._streams is not None:
            self._closed_at_collection = self._streams()[1]
        self._task = asyncio.get_running_loop().create_task(self._run(low), name="malloc trim")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _run(self, low: int) -> None:
        while True:
            await asyncio.sleep(self._every)
            collected = self._collect_ended_burst()
            if collected and self._free_lists is not None:
                await self._free_lists()
            if self._tables is not None:
                compact(self._tables())  # looks at each table's size; rebuilds few
            if self._glibc is not None:
                low = await self._trim(low, collected)

    def _collect_ended_burst(self) -> bool:
        """A full collection once a burst of streams has ended (see the module's docstring)."""
        if self._streams is None:
            return False
        open_now, closed = self._streams()
        ended = closed - self._closed_at_collection
        if ended < self._burst or open_now * 4 > ended:
            return False
        self._collect()
        # CPython's attribute cache keeps the name of each lookup it caches, and names made
        # at run time (C code looking up "dst" or "utcoffset" by a C string) are new strings
        # each time: after 5,000 streams closed it held ~1,250 of them made mid-burst, each
        # keeping a page of free heap resident (`bench.traced`'s heap walk). Refilled as
        # lookups happen.
        sys._clear_type_cache()
        self._closed_at_collection = closed
        return True

    async def _trim(self, low: int, collected: bool) -> int:
        """Trim a heap holding more than `free_mb` free; the new low-water mark."""
        assert self._glibc is not None
        free, trim = self._glibc
        held = free()
        low = held if collected else min(low, held)
        if held > self._free:
            if held - low > self._collect_above:
                self._collect()  # empties the free lists (see the module's docstring)
                low = held
            await asyncio.get_running_loop().run_in_executor(None, trim)
            # glibc still counts the returned pages as free, so a heap past the
            # threshold is trimmed at every check: debug, not a line every 30 s.
            log.debug("returned free heap memory", extra={"free_bytes_before": held})
        return low


Table = set[Any] | weakref.WeakSet[Any]


def compact(tables: Iterable[Table]) -> int:
    """Rebuild in place each table whose slots far outnumber its entries; how many were.

    A set never shrinks as entries leave it: asyncio's registry of tasks (three an
    open stream) and uvicorn's sets of connections and of request tasks kept the table of
    a burst's peak, 0.5-1 MB each after 5,000 streams, big enough for glibc to map each on
    its own (`mmapped` +3 MB after they closed, `bench.memory --probe DIR`). Rebuilt, the
    same entries take a table their size, and the big one is unmapped. It runs in the
    event loop, so nothing adds or removes an entry meanwhile; a weak set being iterated
    is left alone, and the collector is off, so no weak reference's callback runs between
    the emptying and the refilling."""
    rebuilt = 0
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        for table in tables:
            if isinstance(table, weakref.WeakSet):
                if table._iterating or table._pending_removals:  # type: ignore[attr-defined]
                    continue
                data: set[Any] = table.data  # type: ignore[attr-defined]
            else:
                data = table
            if sys.getsizeof(data) < _COMPACT_FROM_BYTES or len(data) * 128 > sys.getsizeof(data):
                continue
            entries = list(data)
            data.clear()
            data.update(entries)
            rebuilt += 1
    finally:
        if was_enabled:
            gc.enable()
    return rebuilt


@contextlib.contextmanager
def long_lived() -> Iterator[None]:
    """What is made inside lives as long as the process: start-up's imports and app.

    The cyclic collector is off meanwhile; at the end one collection frees what was
    garbage and the rest is frozen (moved to the permanent generation), so no later
    collection walks it again. Start-up makes about a million such objects (modules,
    classes, pydantic schemas) and little garbage, and the collections in between, each
    walking all of them again, were about a third of start-up's CPU: from spawn to the
    first /healthz, 2.2 s of CPU before, 1.5-1.65 s this way, with the same idle RSS.
    A collector that was already off stays off.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.collect()
        gc.freeze()
        if was_enabled:
            gc.enable()
