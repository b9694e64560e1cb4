"""Emptying two C free lists that keep a burst's last objects, and the pages around them.

Why: `_asyncio` keeps up to 255 freed future iterators (one is made for every `await` of
a future) and uvloop up to 250 freed callback handles (one for every `call_soon`: each
task's wake-up) for reuse, and no Python call empties either. During a burst of streams
both lists run dry; once the streams close, the first objects to die refill them: objects
made mid-burst, scattered over the part of the heap the burst grew. Each keeps its page
of an otherwise free heap resident, where no trim can return it (`bench.traced`'s heap
walk after 5,000 streams closed: of 2,219 pages held above the heap's pre-burst top, 235
held by future iterators and 177 by handles).

A free list keeps an object only while it is not full. So a reserve of each is made at
start-up, inside the heap start-up filled; after a burst, `refresh` takes what the lists
hold, lets go of the reserve (the lists, now empty, take it in), lets go of what it took
(the lists are full: those objects are freed for real, and their pages can be returned),
and takes its reserve back. The lists are left empty and the reserve where it was.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

# CPython 3.11's FI_FREELIST_MAXLEN (Modules/_asynciomodule.c) and uvloop's
# DEFAULT_FREELIST_SIZE (uvloop/includes/consts.pxi).
FUTURE_ITERATORS = 255
HANDLES = 250


def _nothing() -> None:
    pass


class FreeListReserve:
    """Start-up's own future iterators and loop handles, swapped into the free lists after
    a burst; make it at start-up, in the event loop that serves."""

    def __init__(
        self,
        *,
        future_iterators: int = FUTURE_ITERATORS,
        handles: int = HANDLES,
        turn: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self._loop = asyncio.get_running_loop()
        self._future = self._loop.create_future()
        # One context for every handle: a handle made without one copies the current context.
        self._context = contextvars.Context()
        self._turn = turn or (lambda: asyncio.sleep(0))
        self._iterators = self._take_iterators(future_iterators)
        self._handles = self._take_handles(handles)

    def _take_iterators(self, n: int) -> list[Iterator[Any]]:
        return [self._future.__await__() for _ in range(n)]

    def _take_handles(self, n: int) -> list[asyncio.Handle]:
        """`n` handles, cancelled: the loop lets go of each at its next turn, we keep it."""
        handles = [self._loop.call_soon(_nothing, context=self._context) for _ in range(n)]
        for handle in handles:
            handle.cancel()
        return handles

    async def refresh(self) -> None:
        """Frees what the free lists hold for the reserve (see the module's docstring)."""
        n = len(self._iterators)
        taken = self._take_iterators(n)
        self._iterators.clear()  # into the emptied free list
        del taken  # the list is full: freed
        self._iterators = self._take_iterators(n)

        n = len(self._handles)
        held = self._take_handles(n)
        await self._turn()  # the loop lets go of them: now only `held` holds them
        self._handles.clear()
        del held
        self._handles = self._take_handles(n)
