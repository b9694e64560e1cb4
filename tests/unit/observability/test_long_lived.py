"""Start-up's objects are frozen once made, its garbage freed, the collector restored."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from app.observability.memory import long_lived


class Node:
    def __init__(self) -> None:
        self.me = self  # a cycle: only the cyclic collector frees it


@pytest.fixture(autouse=True)
def _thawed() -> Iterator[None]:
    was_enabled = gc.isenabled()
    yield
    gc.unfreeze()
    if was_enabled:
        gc.enable()


def test_what_is_made_inside_is_frozen_and_its_garbage_freed() -> None:
    gc.unfreeze()
    with long_lived():
        assert not gc.isenabled()  # no collection walks start-up's objects meanwhile
        kept = [Node() for _ in range(1000)]
        dropped = weakref.ref(Node())
    assert dropped() is None  # the garbage was collected, not frozen with the rest
    assert gc.get_freeze_count() >= len(kept)
    assert gc.isenabled()


def test_a_collector_that_was_off_stays_off() -> None:
    gc.disable()
    with long_lived():
        pass
    assert not gc.isenabled()


def test_the_collector_comes_back_when_start_up_fails() -> None:
    gc.enable()
    with pytest.raises(RuntimeError), long_lived():
        raise RuntimeError("bad settings")
    assert gc.isenabled()
