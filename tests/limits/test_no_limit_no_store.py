"""A caller without limits costs the limit store nothing: no round trip to Redis per request
or per run (one per run was a twentieth of a worker's CPU under load), so a Redis that is
down or saturated is not even noticed. A caller with a run limit still takes and gives back
a slot that every instance sees."""

from __future__ import annotations

import logging

import pytest
from redis.asyncio import Redis

from app.domain.errors import RateLimited
from app.domain.identity import Caller
from app.limits.limiter import Limiter
from app.limits.policy import LimitPolicy, Limits
from app.limits.redis_backend import RedisBackend
from app.observability.metrics import Metrics
from tests.limits.conftest import Store
from tests.support.ports import closed_port

ALICE = Caller("alice", frozenset({"user"}))
UNLIMITED = Limits(requests_per_minute=0, concurrent_runs=0, tokens_per_day=0)


async def test_a_caller_without_limits_runs_without_the_limit_store(
    caplog: pytest.LogCaptureFixture,
) -> None:
    nowhere = Redis.from_url(f"redis://127.0.0.1:{closed_port()}/0", socket_connect_timeout=0.2)
    limiter = Limiter(LimitPolicy(UNLIMITED, {}), RedisBackend(nowhere), Metrics())
    caplog.set_level(logging.WARNING, logger="chat_bff.limits")
    try:
        for n in range(3):
            await limiter.check_request(ALICE)
            await limiter.check_tokens(ALICE)
            async with limiter.run_slot(ALICE, f"run_{n}"):
                pass
            await limiter.add_tokens(ALICE, 120)
    finally:
        await limiter.aclose()
    assert [r.getMessage() for r in caplog.records] == []


async def test_a_run_limit_is_still_given_back_across_instances(store: Store) -> None:
    def instance() -> Limiter:
        return Limiter(LimitPolicy(Limits(concurrent_runs=1), {}), store.new(), Metrics())

    first, second = instance(), instance()
    try:
        await first.acquire_run(ALICE, "run_1")
        with pytest.raises(RateLimited):
            await second.acquire_run(ALICE, "run_2")
        await first.release_run(ALICE, "run_1")
        await second.acquire_run(ALICE, "run_2")
        with pytest.raises(RateLimited):
            await first.acquire_run(ALICE, "run_3")
    finally:
        await first.aclose()
        await second.aclose()
