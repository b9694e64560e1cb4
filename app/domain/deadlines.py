"""One timer per event loop for the deadlines every open stream keeps.

Why: an open stream waits under several deadlines at once (the run's time limit, the
heartbeat's interval, the upstream read's timeout, each send's timeout), and each was a
timer of the event loop's own: under uvloop a `TimerHandle`, a `UVTimer` and libuv's timer,
about 0.7 KB, plus the loop's set of timers grown to the number of open streams times
three. After a burst of streams closed, uvloop kept 250 of those timers of each kind for
reuse, made at random moments of the burst, and each kept a page or two of an otherwise
free heap from going back to the system (`bench.memory --counts 5000 --probe DIR`).

Here a deadline is a small list `[when, order, callback, args]` in one heap per loop
(`heapq`, compared in C: when, then the order it was made in, as the loop orders its own
timers), and the loop holds one timer, for the earliest. A cancelled deadline is marked
and dropped when it reaches the top, or all together once they are most of the heap, so
cancelling costs nothing and the heap never holds more than twice what is live.
Callbacks run in the loop's timer callback, earliest first; one that raises is reported
to the loop's exception handler, as the loop reports its own timers' callbacks, and the
others still run.

`timeout(delay)` is `asyncio.timeout` on this heap: the same states, expiry, cancellation
and `TimeoutError` (CPython 3.11's code, with the timer moved); only where its timer
lives differs.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import weakref
from collections.abc import Callable
from types import TracebackType
from typing import Any

# A deadline is cancelled (or has fired) when its callback is None; the loop's timers fire
# up to a millisecond early under uvloop (libuv counts milliseconds), so the heap does too.
_CALLBACK, _ARGS, _HEAP = 2, 3, 4
_EARLY = 0.001


class Deadline(list[Any]):
    """`[when, order, callback, args, heap]`: a list, so the heap compares it in C (the
    order is unique: nothing past it is ever compared)."""

    __slots__ = ()

    def cancel(self) -> None:
        if self[_CALLBACK] is not None:
            self[_CALLBACK] = None
            self[_ARGS] = ()  # let go of what the callback would have been given
            self[_HEAP].cancelled_one()

    def when(self) -> float:
        return float(self[0])

    def cancelled(self) -> bool:
        """Cancelled, or already fired."""
        return self[_CALLBACK] is None


class _Heap:
    """The deadlines of one event loop, and the loop's one timer for the earliest."""

    __slots__ = ("__weakref__", "cancelled", "entries", "timer", "timer_when")

    def __init__(self) -> None:
        self.entries: list[Deadline] = []
        self.cancelled = 0
        self.timer: asyncio.TimerHandle | None = None
        self.timer_when = 0.0

    def cancelled_one(self) -> None:
        self.cancelled += 1
        entries = self.entries
        if self.cancelled > 64 and self.cancelled * 2 > len(entries):
            entries[:] = [d for d in entries if d[_CALLBACK] is not None]
            heapq.heapify(entries)
            self.cancelled = 0

    def push(self, loop: asyncio.AbstractEventLoop, deadline: Deadline) -> None:
        heapq.heappush(self.entries, deadline)
        if self.timer is None or deadline[0] < self.timer_when:
            self.arm(loop, deadline[0])

    def arm(self, loop: asyncio.AbstractEventLoop, when: float) -> None:
        if self.timer is not None:
            self.timer.cancel()
        self.timer_when = when
        self.timer = loop.call_at(when, self.fire, loop)

    def fire(self, loop: asyncio.AbstractEventLoop) -> None:
        self.timer = None
        try:
            self._run_due(loop)
        finally:  # a SystemExit or KeyboardInterrupt leaves the rest armed all the same
            self._rearm(loop)

    def _run_due(self, loop: asyncio.AbstractEventLoop) -> None:
        entries = self.entries
        due = loop.time() + _EARLY
        while entries and entries[0][0] <= due:
            deadline = heapq.heappop(entries)
            callback, args = deadline[_CALLBACK], deadline[_ARGS]
            if callback is None:
                self.cancelled -= 1
                continue
            deadline[_CALLBACK] = None
            deadline[_ARGS] = ()
            try:
                callback(*args)
            except (SystemExit, KeyboardInterrupt):
                raise
            except BaseException as exc:  # noqa: BLE001 - reported as asyncio reports a handle's
                loop.call_exception_handler(
                    {"message": f"Exception in deadline callback {callback!r}", "exception": exc}
                )

    def _rearm(self, loop: asyncio.AbstractEventLoop) -> None:
        entries = self.entries
        while entries and entries[0][_CALLBACK] is None:  # cancelled, now at the top
            heapq.heappop(entries)
            self.cancelled -= 1
        if entries and (self.timer is None or entries[0][0] < self.timer_when):
            self.arm(loop, entries[0][0])  # none armed, or a callback armed a later one


# Each loop's heap, held weakly on both sides: an armed heap holds its loop through the
# timer, so a strong value would keep every loop that ended with a deadline pending (or a
# cancelled one not yet dropped) alive for the process. The loop's armed timer and the
# deadlines themselves keep a heap alive; a heap with neither has nothing to fire.
_heaps: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, weakref.ref[_Heap]] = (
    weakref.WeakKeyDictionary()
)
_order = itertools.count()


def call_at(when: float, callback: Callable[..., object], *args: Any) -> Deadline:
    """`loop.call_at` on the running loop's shared heap: `callback(*args)` at `when`
    (the loop's clock) unless the returned deadline is cancelled first."""
    loop = asyncio.get_running_loop()
    ref = _heaps.get(loop)
    heap = None if ref is None else ref()
    if heap is None:
        heap = _Heap()
        _heaps[loop] = weakref.ref(heap)
    deadline = Deadline((when, next(_order), callback, args, heap))
    heap.push(loop, deadline)
    return deadline


def call_later(delay: float, callback: Callable[..., object], *args: Any) -> Deadline:
    return call_at(asyncio.get_running_loop().time() + delay, callback, *args)


def counts() -> tuple[int, int]:
    """(deadlines live, deadlines held) on the running loop's heap: what is held beyond
    the live ones is cancelled ones not yet dropped."""
    ref = _heaps.get(asyncio.get_running_loop())
    heap = None if ref is None else ref()
    if heap is None:
        return 0, 0
    return len(heap.entries) - heap.cancelled, len(heap.entries)


class Timeout:
    """`asyncio.Timeout` (CPython 3.11's, the same states) with its timer on the shared
    heap: on expiry the task is cancelled, and that cancellation, if nothing else
    cancelled the task meanwhile, leaves the block as `TimeoutError`."""

    __slots__ = ("_cancelling", "_deadline", "_state", "_task", "_when")

    def __init__(self, when: float | None) -> None:
        self._state = "created"
        self._when = when
        self._deadline: Deadline | None = None
        self._task: asyncio.Task[Any] | None = None
        self._cancelling = 0

    def when(self) -> float | None:
        return self._when

    def reschedule(self, when: float | None) -> None:
        if self._state != "active":
            raise RuntimeError(f"Cannot change state of {self._state} Timeout")
        self._when = when
        if self._deadline is not None:
            self._deadline.cancel()
        self._deadline = None if when is None else call_at(when, self._on_timeout)

    def expired(self) -> bool:
        return self._state in ("expiring", "expired")

    async def __aenter__(self) -> Timeout:
        if self._state != "created":
            raise RuntimeError("Timeout has already been entered")
        task = asyncio.current_task()
        if task is None:
            raise RuntimeError("Timeout should be used inside a task")
        self._state = "active"
        self._task = task
        self._cancelling = task.cancelling()
        self.reschedule(self._when)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        if self._state == "expiring":
            self._state = "expired"
            assert self._task is not None
            if self._task.uncancel() <= self._cancelling and exc_type is asyncio.CancelledError:
                raise TimeoutError from exc_val
        elif self._state == "active":
            self._state = "exited"
        self._task = None

    def _on_timeout(self) -> None:
        assert self._task is not None
        self._task.cancel()
        self._state = "expiring"
        self._deadline = None


def timeout(delay: float | None) -> Timeout:
    """`asyncio.timeout(delay)` on the shared heap."""
    return Timeout(None if delay is None else asyncio.get_running_loop().time() + delay)
