"""While the limit store (Redis) is unavailable, the limiter lets requests through and says
so in the log as a spell, not a line per request: one warning when it goes away, a
reminder at most once a minute, one line when it answers again. Updates skipped while
every connection of the limiter is in use are told the same way."""

from __future__ import annotations

import logging
import uuid

import pytest
import redis
from redis import asyncio as aredis

from app.limits.limiter import Limiter
from app.limits.policy import LimitPolicy, Limits
from app.limits.redis_backend import RedisBackend
from app.limits.store_outage_log import BUSY, StoreOutageLog
from app.observability.metrics import Metrics
from app.redis.outage import RedisOutage
from tests.e2e.redis_server import own_redis
from tests.limits.test_no_limit_no_store import ALICE
from tests.support.ports import closed_port
from tests.unit.redis.test_outage import Clock

LIMITS = Limits(requests_per_minute=10_000, concurrent_runs=8, tokens_per_day=1_000_000)


def limiter_on(url: str, outage: RedisOutage, log: StoreOutageLog | None = None) -> Limiter:
    backend = RedisBackend.from_url(url, timeout=1.0, outage=outage)
    return Limiter(LimitPolicy(LIMITS, {}), backend, Metrics(), outage_log=log)


async def some_traffic(limiter: Limiter, n: int) -> None:
    await limiter.check_request(ALICE)
    await limiter.check_tokens(ALICE)
    async with limiter.run_slot(ALICE, f"run_{n}"):
        await limiter.add_tokens(ALICE, 120)


def told(record: logging.LogRecord) -> tuple[float, int]:
    """How long the spell lasted and how many requests it let through, as the line says."""
    return vars(record)["seconds"], vars(record)["let_through"]


def lines(caplog: pytest.LogCaptureFixture) -> list[tuple[str, int, str]]:
    return [(r.name, r.levelno, r.getMessage()) for r in caplog.records]


async def test_a_burst_while_redis_is_down_logs_one_line_not_one_per_request(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="chat_bff")
    limiter = limiter_on(f"redis://127.0.0.1:{closed_port()}/0", RedisOutage(2.0))
    try:
        for n in range(50):
            await some_traffic(limiter, n)
    finally:
        await limiter.aclose()

    logged = lines(caplog)
    assert len(logged) == 2, logged  # of 150 checks let through, 100 updates skipped
    assert logged[0][:2] == ("chat_bff.redis", logging.WARNING)  # the breaker opens
    assert logged[1][:2] == ("chat_bff.limits", logging.WARNING)
    assert "letting requests through" in logged[1][2]


async def test_a_long_outage_is_recalled_at_most_once_a_minute_with_what_went_unchecked(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="chat_bff.limits")
    clock = Clock()
    outage_log = StoreOutageLog(60.0, clock=clock)
    limiter = limiter_on(f"redis://127.0.0.1:{closed_port()}/0", RedisOutage(0.0), outage_log)
    try:
        for _ in range(200):  # 150 s of requests, one every 0.75 s
            await limiter.check_request(ALICE)
            clock.now += 0.75
    finally:
        await limiter.aclose()

    records = [r for r in caplog.records if r.name == "chat_bff.limits"]
    assert [r.levelno for r in records] == [logging.WARNING] * 3  # at 0 s, 60 s, 120 s
    assert "still unavailable" in records[1].getMessage()
    assert told(records[1]) == (60.0, 81)
    assert told(records[2]) == (120.0, 161)


async def test_redis_answering_again_is_logged_once_with_what_went_unchecked(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="chat_bff.limits")
    clock = Clock()
    with own_redis(password="right") as server:
        admin = redis.Redis(port=server.port, password="right")
        limiter = limiter_on(server.url_with("right"), RedisOutage(2.0, clock=clock))
        try:
            await some_traffic(limiter, 0)
            assert lines(caplog) == []
            caplog.set_level(logging.INFO, logger="chat_bff.limits")

            # Redis now refuses the limiter's password, and drops its connections.
            admin.config_set("requirepass", "changed")
            admin.client_kill_filter(_type="normal", skipme=True)
            for n in range(1, 31):
                await some_traffic(limiter, n)
                clock.now += 0.5  # the breaker probes again every 2 s: 7 more refusals
            admin.config_set("requirepass", "right")
            clock.now += 2.0
            await some_traffic(limiter, 31)
            await some_traffic(limiter, 32)
        finally:
            await limiter.aclose()
            admin.close()

    records = [r for r in caplog.records if r.name == "chat_bff.limits"]
    assert [r.levelno for r in records] == [logging.WARNING, logging.INFO], lines(caplog)
    assert "answers again" in records[1].getMessage()
    assert told(records[1])[1] == 30 * 3


async def test_updates_skipped_while_every_connection_is_busy_are_a_spell_not_a_line_each(
    caplog: pytest.LogCaptureFixture, redis_url: str
) -> None:
    caplog.set_level(logging.INFO, logger="chat_bff.limits")
    clock = Clock()
    client = aredis.Redis.from_url(redis_url, max_connections=1)
    backend = RedisBackend(client, namespace=f"test:{uuid.uuid4().hex}:", pool_timeout=0.01)
    busy = StoreOutageLog(60.0, clock=clock, words=BUSY)
    limiter = Limiter(LimitPolicy(LIMITS, {}), backend, Metrics(), busy_log=busy)
    try:
        async with backend._gate.turn():  # the pool's only connection is in use meanwhile
            for _ in range(100):  # 150 s of token counts, one every 1.5 s
                await limiter.add_tokens(ALICE, 120)
                clock.now += 1.5
        await limiter.add_tokens(ALICE, 120)  # the connection came free
    finally:
        await limiter.aclose()

    records = [r for r in caplog.records if r.name == "chat_bff.limits"]
    assert [r.levelno for r in records] == [logging.WARNING] * 3 + [logging.INFO]
    assert "busy" in records[0].getMessage() and "still busy" in records[1].getMessage()
    assert vars(records[2])["updates_skipped"] == 81  # at 0 s, 60 s, 120 s
    assert vars(records[3])["updates_skipped"] == 100
    assert "takes updates again" in records[3].getMessage()
