"""What `/readyz` says of Redis is news: with nothing heard lately, one PING of its own
(through the breaker, which keeps and logs its verdict); with something heard, none. A
probe every second costs Redis at most one PING per `FRESH_FOR`, concurrent probes share
one, and a Redis that comes back is found by the probe itself."""

from __future__ import annotations

import asyncio

import redis

from app.redis.outage import RedisOutage
from app.redis.readiness import FRESH_FOR, RedisReadiness
from tests.e2e.redis_server import own_redis
from tests.unit.redis.test_outage import Clock


def pings(admin: redis.Redis) -> int:
    stats: dict[str, dict[str, int]] = admin.info("commandstats")
    return stats.get("cmdstat_ping", {}).get("calls", 0)


async def test_probes_every_second_cost_redis_one_ping_per_window() -> None:
    clock = Clock()
    with own_redis() as server:
        admin = redis.Redis(port=server.port)
        readiness = RedisReadiness.from_url(server.url, RedisOutage(2.0, clock=clock), timeout=1.0)
        try:
            before = pings(admin)
            seen = []
            for _ in range(3 * int(FRESH_FOR)):  # one probe a second, three windows
                seen.append(await readiness.state())
                clock.now += 1.0
            together = await asyncio.gather(*(readiness.state() for _ in range(10)))
            sent = pings(admin) - before
        finally:
            await readiness.aclose()
            admin.close()

    assert set(seen) == set(together) == {"ok"}
    assert sent == 4  # one per window, and one for the ten checks that came at once


async def test_an_idle_process_finds_a_refused_password_then_the_fix() -> None:
    clock = Clock()
    with own_redis(password="right") as server:
        admin = redis.Redis(port=server.port, password="right")
        outage = RedisOutage(2.0, clock=clock)
        readiness = RedisReadiness.from_url(server.url_with("right"), outage, timeout=1.0)
        try:
            admin.config_set("requirepass", "changed")
            refused = await readiness.state()
            admin.config_set("requirepass", "right")
            clock.now += 1.0
            still_known = await readiness.state()  # heard 1 s ago: no probe
            clock.now += FRESH_FOR
            fixed = await readiness.state()
        finally:
            await readiness.aclose()
            admin.close()

    assert (refused, still_known, fixed) == ("auth_failed", "auth_failed", "ok")
