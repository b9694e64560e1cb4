"""The test session's own objects stay frozen while in-process apps come and go.

A started app freezes the heap after start-up and unfreezes it at shutdown
(`app.observability.memory`: `long_lived`, `serving_collector`), which is right for a
process that serves one app. A test session builds thousands of apps in one process, and
each unfreeze threw the whole session heap (pytest, the imported modules, hypothesis:
~290,000 tracked objects) back to the collector, so the full collection at the next app's
start-up walked all of it again: ~145 ms per app started, half the wall time of
tests/api/test_conversations.py on SQLite.

So the session's objects are frozen when the tests are collected and again every few
tests, before a test's fixtures are set up (`freeze_between_tests`): what outlived the
tests before (lazily imported modules, caches) is then frozen too, and the few objects of
module- or session-scoped fixtures that become garbage afterwards stay. While an app runs
in-process (`keep_session_heap_frozen`) the service's freeze and unfreeze are left out:
its collections are real and still free every test's garbage, they just no longer walk the
session's objects. What freezing does is tested on its own
(tests/unit/observability/test_long_lived.py, with the real `gc`).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import app.observability.memory as memory

FREEZE_EVERY = 10  # tests
_GC = "gc"  # the service's memory module's name for the collector
_tests: list[int] = [0]  # tests set up since the last freeze
_running: list[int] = [0]  # in-process apps running now


class _KeepFrozen:
    """`gc` for the service's memory module while apps run in-process: no freeze, no
    unfreeze, everything else the real module."""

    def freeze(self) -> None:
        pass

    def unfreeze(self) -> None:
        pass

    def __getattr__(self, name: str) -> Any:
        return getattr(gc, name)


def freeze_session_heap() -> None:
    gc.collect()
    gc.freeze()
    _tests[0] = 0


def freeze_between_tests() -> None:
    """Before a test's fixtures: every FREEZE_EVERY tests, freeze what the tests before
    left alive (a test of freezing itself unfreezes the whole heap when it ends)."""
    _tests[0] += 1
    if _tests[0] >= FREEZE_EVERY and _running[0] == 0:
        freeze_session_heap()


@contextmanager
def keep_session_heap_frozen() -> Iterator[None]:
    """Around an in-process app's lifespan; apps may overlap (several instances)."""
    if _running[0] == 0:
        setattr(memory, _GC, _KeepFrozen())
    _running[0] += 1
    try:
        yield
    finally:
        _running[0] -= 1
        if _running[0] == 0:
            setattr(memory, _GC, gc)
