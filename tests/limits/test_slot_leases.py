"""A run's concurrent-run slot lives as long as its run, not as long as a timeout: renewed
while the run lives in this process, lapsing within one lease once its process stops
renewing (kill -9), and never brought back by a renewal after it was released."""

from __future__ import annotations

import asyncio
import time

import pytest

from app.domain.errors import RateLimited
from app.domain.identity import Caller
from app.limits.backends import LimitBackend
from app.limits.limiter import Limiter
from app.limits.policy import LimitPolicy, Limits
from app.observability.metrics import Metrics
from tests.limits.conftest import Store

ALICE = Caller("alice", frozenset({"user"}))


def one_run_at_a_time(backend: LimitBackend, *, lease: float) -> Limiter:
    return Limiter(
        LimitPolicy(Limits(concurrent_runs=1), {}), backend, Metrics(), run_lease_seconds=lease
    )


async def test_a_slot_is_kept_past_its_lease_while_its_run_lives(store: Store) -> None:
    limiter = one_run_at_a_time(store.new(), lease=0.3)
    try:
        await limiter.acquire_run(ALICE, "run_long")
        await asyncio.sleep(1.2)  # four leases: only renewals keep the slot
        with pytest.raises(RateLimited):
            await limiter.acquire_run(ALICE, "run_next")
        await limiter.release_run(ALICE, "run_long")
        await limiter.acquire_run(ALICE, "run_next")
    finally:
        await limiter.aclose()


async def test_a_slot_lapses_once_its_process_stops_renewing(store: Store) -> None:
    crashed = one_run_at_a_time(store.new(), lease=1.0)
    await crashed.acquire_run(ALICE, "run_orphan")
    await crashed.aclose()  # the process is gone: nothing renews or releases the slot
    survivor = one_run_at_a_time(store.new(), lease=1.0)
    try:
        with pytest.raises(RateLimited):
            await survivor.acquire_run(ALICE, "run_next")
        deadline = time.monotonic() + 10
        while True:
            try:
                await survivor.acquire_run(ALICE, "run_next")
                break
            except RateLimited:
                assert time.monotonic() < deadline, "the orphaned slot never lapsed"
                await asyncio.sleep(0.1)
    finally:
        await survivor.aclose()


async def test_a_renewal_never_brings_back_a_released_slot(store: Store) -> None:
    backend = store.new()
    try:
        assert await backend.acquire("runs:alice", "run_1", 1, 60)
        await backend.release("runs:alice", "run_1")
        await backend.renew({"runs:alice": ["run_1"]}, 60)
        assert await backend.acquire("runs:alice", "run_2", 1, 60)
    finally:
        await backend.aclose()


async def test_a_renewal_never_brings_back_a_lapsed_slot(store: Store) -> None:
    backend = store.new()
    try:
        assert await backend.acquire("runs:alice", "run_1", 1, 0.05)
        await asyncio.sleep(0.2)
        await backend.renew({"runs:alice": ["run_1"]}, 60)
        assert await backend.acquire("runs:alice", "run_2", 1, 60)
    finally:
        await backend.aclose()


async def test_a_slot_freed_for_a_dead_process_is_free_everywhere(store: Store) -> None:
    crashed = one_run_at_a_time(store.new(), lease=3600)
    await crashed.acquire_run(ALICE, "run_dead")
    await crashed.aclose()
    survivor = one_run_at_a_time(store.new(), lease=3600)
    try:
        await survivor.release_slot("alice", "run_dead")  # what crash recovery calls
        await survivor.acquire_run(ALICE, "run_next")
    finally:
        await survivor.aclose()


async def test_a_short_lease_never_cuts_a_longer_one_short(store: Store) -> None:
    """Instances with different RUN_LEASE_SECONDS share a user's slots."""
    backend = store.new()
    try:
        assert await backend.acquire("runs:alice", "run_long", 2, 60)
        assert await backend.acquire("runs:alice", "run_short", 2, 0.05)
        await asyncio.sleep(0.3)
        assert await backend.acquire("runs:alice", "run_next", 2, 60)
        assert not await backend.acquire("runs:alice", "run_one_too_many", 2, 60)
    finally:
        await backend.aclose()
