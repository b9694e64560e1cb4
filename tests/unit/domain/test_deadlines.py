"""The shared deadline heap: one loop timer for every stream's deadlines. A deadline fires
at its time and in the order deadlines were made, a cancelled one never fires and is let
go, many of them stay one loop timer, and `timeout` behaves as `asyncio.timeout`."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from app.domain import deadlines


def _loop_timers(loop: asyncio.AbstractEventLoop) -> int:
    """Live timers of the loop itself (asyncio's pure-Python loop keeps them in a heap)."""
    scheduled: list[asyncio.TimerHandle] = loop._scheduled  # type: ignore[attr-defined]
    return sum(1 for t in scheduled if not t.cancelled())


async def test_deadlines_fire_at_their_time_in_the_order_made() -> None:
    loop = asyncio.get_running_loop()
    fired: list[tuple[str, float]] = []

    def note(name: str, when: float) -> None:
        fired.append((name, when))
        assert loop.time() >= when - 0.001  # never before its time (libuv counts ms)

    now = loop.time()
    for name, when in (("late", 0.03), ("first", 0.01), ("second", 0.01), ("middle", 0.02)):
        deadlines.call_at(now + when, note, name, now + when)
    await asyncio.sleep(0.1)
    assert [name for name, _ in fired] == ["first", "second", "middle", "late"]
    assert deadlines.counts() == (0, 0)


async def test_a_deadline_in_the_past_fires_at_the_next_turn() -> None:
    fired: list[int] = []
    deadlines.call_later(-1.0, fired.append, 1)
    assert fired == []
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert fired == [1]


async def test_a_cancelled_deadline_never_fires_and_lets_go_of_its_arguments() -> None:
    fired: list[Any] = []
    kept = object()
    cancelled = deadlines.call_later(0.01, fired.append, kept)
    deadlines.call_later(0.02, fired.append, "other")
    cancelled.cancel()
    assert cancelled.cancelled()
    assert cancelled[3] == ()  # the arguments are gone at once, not when it is dropped
    assert deadlines.counts() == (1, 2)
    await asyncio.sleep(0.05)
    assert fired == ["other"]
    cancelled.cancel()  # again, after the heap dropped it: nothing happens
    assert deadlines.counts() == (0, 0)


async def test_many_deadlines_are_one_loop_timer_and_cancelled_ones_are_dropped() -> None:
    loop = asyncio.get_running_loop()
    if not hasattr(loop, "_scheduled"):
        pytest.skip("the loop's own timers are not visible")
    fired: list[int] = []
    made = [deadlines.call_later(0.05 + i * 1e-6, fired.append, i) for i in range(10_000)]
    assert _loop_timers(loop) == 1
    for d in made[::2]:
        d.cancel()
    for d in made[1:9_000:2]:  # most of them: the heap drops them together
        d.cancel()
    live, held = deadlines.counts()
    assert live == 500
    assert held <= 2 * live + 64
    assert _loop_timers(loop) == 1
    await asyncio.sleep(0.1)
    assert fired == list(range(9_001, 10_000, 2))
    assert deadlines.counts() == (0, 0)
    assert _loop_timers(loop) == 0


async def test_an_earlier_deadline_moves_the_loop_timer_forward() -> None:
    fired: list[str] = []
    deadlines.call_later(10.0, fired.append, "late")
    deadlines.call_later(0.01, fired.append, "soon")
    await asyncio.sleep(0.05)
    assert fired == ["soon"]
    assert deadlines.counts() == (1, 1)


async def test_a_failing_callback_is_reported_and_the_others_still_fire() -> None:
    loop = asyncio.get_running_loop()
    reported: list[dict[str, Any]] = []
    loop.set_exception_handler(lambda _loop, context: reported.append(context))
    fired: list[int] = []

    def fails() -> None:
        raise ValueError("broken")

    deadlines.call_later(0.01, fails)
    deadlines.call_later(0.01, fired.append, 1)
    await asyncio.sleep(0.05)
    assert fired == [1]
    assert isinstance(reported[0]["exception"], ValueError)


async def test_a_callback_raising_a_base_exception_leaves_the_later_deadlines_armed() -> None:
    """A callback that raises a BaseException the loop reports (a CancelledError, say:
    asyncio reports every one but SystemExit and KeyboardInterrupt) is reported too, and
    the deadlines due after it still fire: it went out of the heap's timer callback with
    no timer armed for them, so they waited for some later deadline to be made."""
    loop = asyncio.get_running_loop()
    reported: list[dict[str, Any]] = []
    loop.set_exception_handler(lambda _loop, context: reported.append(context))
    fired: list[int] = []

    def cancelled() -> None:
        raise asyncio.CancelledError

    deadlines.call_later(0.01, cancelled)
    deadlines.call_later(0.01, fired.append, 1)
    deadlines.call_later(0.03, fired.append, 2)
    await asyncio.sleep(0.1)
    assert fired == [1, 2]
    assert isinstance(reported[0]["exception"], asyncio.CancelledError)
    assert deadlines.counts() == (0, 0)


async def test_timeout_expires_as_asyncio_timeout_does() -> None:
    with pytest.raises(TimeoutError):
        async with deadlines.timeout(0.01) as cm:
            await asyncio.sleep(1.0)
    assert cm.expired()
    assert deadlines.counts() == (0, 0)


async def test_timeout_not_reached_leaves_nothing_live() -> None:
    async with deadlines.timeout(5.0) as cm:
        assert deadlines.counts()[0] == 1
        await asyncio.sleep(0)
    assert not cm.expired()
    assert deadlines.counts()[0] == 0
    async with deadlines.timeout(None):
        assert deadlines.counts()[0] == 0


async def _cancelled_from_outside() -> None:
    task = asyncio.current_task()
    assert task is not None
    async with deadlines.timeout(5.0):
        asyncio.get_running_loop().call_soon(task.cancel)
        await asyncio.sleep(1.0)


async def test_timeout_passes_other_cancellations_on() -> None:
    with pytest.raises(asyncio.CancelledError):  # not a TimeoutError
        await asyncio.ensure_future(_cancelled_from_outside())
    assert deadlines.counts() == (0, 1)  # cancelled, dropped when it reaches the top


async def _moved(seen: list[deadlines.Timeout]) -> None:
    async with deadlines.timeout(None) as cm:
        seen.append(cm)
        cm.reschedule(asyncio.get_running_loop().time() + 0.01)
        await asyncio.sleep(1.0)


async def test_a_timeout_can_be_moved() -> None:
    seen: list[deadlines.Timeout] = []
    with pytest.raises(TimeoutError):
        await _moved(seen)
    assert seen[0].expired()
    assert deadlines.counts() == (0, 0)


async def test_nested_timeouts_the_inner_one_expires_first() -> None:
    async with deadlines.timeout(5.0) as outer:
        with pytest.raises(TimeoutError):
            async with deadlines.timeout(0.01):
                await asyncio.sleep(1.0)
    assert not outer.expired()


async def test_a_timeout_is_entered_once_inside_a_task() -> None:
    cm = deadlines.timeout(1.0)
    async with cm:
        pass
    with pytest.raises(RuntimeError):
        async with cm:
            pass


@pytest.mark.parametrize("pending", [True, False], ids=["deadline-pending", "deadline-cancelled"])
def test_a_closed_loop_is_let_go_with_deadlines_left_on_its_heap(pending: bool) -> None:
    """A loop that closes with its heap's timer armed (a deadline pending, or a cancelled
    one not yet dropped) is freed: the heap kept the loop alive through that timer, and a
    table of heaps keyed weakly by loop kept every such loop, and what its deadlines held
    (tasks, coroutines), for the life of the process: one per test, or per `asyncio.run`."""
    import gc
    import weakref

    async def leave_one() -> None:
        deadline = deadlines.call_later(60, print, "never")
        if not pending:
            deadline.cancel()

    loop = asyncio.new_event_loop()
    loop.run_until_complete(leave_one())
    loop.close()
    gone = weakref.ref(loop)
    del loop
    gc.collect()
    assert gone() is None
