"""The limiter's Redis connections are bounded, and running out of them refuses requests
(503 limiter_busy) instead of letting them through: a flood must not switch limits off.
Redis itself being down still lets requests through (tests/api/test_limits.py)."""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from pathlib import Path

import pytest
from pydantic import SecretStr
from redis.asyncio import Redis

from app.domain.identity import Caller
from app.limits.backends import BackendBusy
from app.limits.limiter import Limiter, LimiterBusy
from app.limits.policy import LimitPolicy, Limits
from app.limits.redis_backend import ConnectionGate, RedisBackend
from app.observability.metrics import Metrics
from tests.auth.tokens import HS_SECRET, bearer, hs_token, sqlite_settings
from tests.fakes.db import MakeApi

FLOOD = 300
LIMIT = 20


async def test_a_flood_through_a_small_pool_never_gets_past_the_limit(
    make_api: MakeApi, tmp_path: Path, redis_url: str
) -> None:
    caller = bearer(hs_token(sub=f"flood-{uuid.uuid4().hex}"))
    settings = sqlite_settings(
        tmp_path,
        jwt_secret=SecretStr(HS_SECRET),
        redis_url=redis_url,
        redis_pool_size=2,
        redis_pool_timeout_seconds=0.05,
        rate_limit_requests_per_minute=LIMIT,
    )
    async with make_api(settings) as api:
        answers = await asyncio.gather(*(api.get("/api/me", headers=caller) for _ in range(FLOOD)))

    codes = Counter(a.status_code for a in answers)
    assert set(codes) <= {200, 429, 503}, codes
    assert codes[200] <= LIMIT, codes
    for busy in (a for a in answers if a.status_code == 503):
        assert busy.json()["error"]["code"] == "limiter_busy"
        assert busy.headers["retry-after"] == "1"


async def test_a_call_that_finds_no_room_waits_then_is_busy() -> None:
    gate = ConnectionGate(1, timeout=0.05)
    async with gate.turn():
        with pytest.raises(BackendBusy):
            async with gate.turn():
                pass
    async with gate.turn():  # the room came back
        pass


async def test_a_waiting_call_gets_the_connection_that_comes_free() -> None:
    gate = ConnectionGate(1, timeout=5)
    order: list[str] = []

    async def hold() -> None:
        async with gate.turn():
            order.append("first in")
            await asyncio.sleep(0.05)
            order.append("first out")

    async def wait() -> None:
        async with gate.turn():
            order.append("second in")

    await asyncio.gather(hold(), wait())
    assert order == ["first in", "first out", "second in"]


async def test_a_limiter_whose_redis_connections_are_all_taken_refuses_with_503(
    redis_url: str,
) -> None:
    client = Redis.from_url(redis_url, max_connections=1)
    backend = RedisBackend(client, namespace=f"test:{uuid.uuid4().hex}:", pool_timeout=0.05)
    limiter = Limiter(LimitPolicy(Limits(requests_per_minute=5), {}), backend, Metrics())

    # Something else holds the pool's only connection (a blocking pop that waits).
    async def hold() -> object:
        return await client.blpop([f"test:{uuid.uuid4().hex}"], timeout=2)

    holder = asyncio.create_task(hold())
    await asyncio.sleep(0.1)
    try:
        with pytest.raises(LimiterBusy) as refused:
            await limiter.check_request(Caller("alice"))
    finally:
        await holder
        await limiter.aclose()
    assert refused.value.status == 503
    assert refused.value.code == "limiter_busy"
    assert refused.value.retry_after == 1.0
