"""Two instances on one Postgres whose Redis (the bus between them) goes away mid-run: a
cancel sent to the instance that does not run the run cannot reach its owner, and says so
with a retryable 503 instead of a 500; once Redis is back the same cancel stops the run.
When only the owner's connection is down, the cancel published meanwhile is lost on the
bus but kept on the run's row: the owner applies it once its bus reconnects, or at its
next lease renewal if it stays cut off; the sender says 503 while it is not applied,
never `running` as if nothing had been asked."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import httpx
import pytest
from redis.asyncio import Redis

from tests.e2e.conftest import Launch
from tests.e2e.test_instances_e2e import shared
from tests.e2e.test_resume_e2e import LONG, read_events, start_run
from tests.fakes.openai_upstream import Completion, FakeOpenAIUpstream
from tests.limits.conftest import reachable_redis_url
from tests.unit.runs.test_redis_bus import Forwarder

pytestmark = [pytest.mark.e2e, pytest.mark.postgres]


async def test_a_cancel_that_cannot_reach_the_owner_is_a_retryable_503_not_a_500(
    launch: Launch, openai_upstream: FakeOpenAIUpstream, postgres_url: str
) -> None:
    redis = Forwarder()
    await redis.up()
    db = 9  # a bus of its own: the instances' control channel is counted below
    settings = shared(openai_upstream, postgres_url) | {
        "REDIS_URL": f"redis://127.0.0.1:{redis.port}/{db}"
    }
    a, b = launch(**settings), launch(**settings)
    openai_upstream.enqueue(Completion(text=LONG, delay=0.05))
    try:
        async with (
            httpx.AsyncClient(base_url=a.base_url, timeout=15) as on_a,
            httpx.AsyncClient(base_url=b.base_url, timeout=15) as on_b,
        ):
            cid, run_id, url = await start_run(on_a)
            await read_events(on_a, url, limit=3)
            await redis.down()

            cancel = f"/api/conversations/{cid}/runs/{run_id}/cancel"
            refused = await on_b.post(cancel)

            assert refused.status_code == 503, refused.text
            assert refused.json()["error"]["code"] == "run_unreachable"
            assert int(refused.headers["Retry-After"]) >= 1
            await redis.up()
            await listening_again(f"chatbff:bus:{db}:control", 2)
            again = await on_b.post(cancel)
            assert again.status_code == 200, again.text
            assert again.json()["status"] == "cancelled"
            frames = await read_events(on_a, url)
    finally:
        await redis.down()
    assert frames[-1].event == "run_end" and frames[-1].data["status"] == "cancelled"


async def listening_again(channel: str, instances: int) -> None:
    """Wait until every instance subscribed to `channel` again (their buses reconnect
    with a backoff of their own)."""
    client = Redis.from_url(reachable_redis_url())
    try:
        for _ in range(100):
            [(_, count)] = await client.pubsub_numsub(channel)
            if count >= instances:
                return
            await asyncio.sleep(0.1)
    finally:
        await client.aclose()
    raise AssertionError(f"{channel} never had {instances} subscribers again")


VERY_LONG = Completion(text=" ".join(f"token{i}" for i in range(600)), delay=0.05)  # 30 s


@dataclass
class CutOff:
    """A run on instance a, whose own Redis connection is down, and instance b, whose
    bus is fine."""

    on_a: httpx.AsyncClient
    on_b: httpx.AsyncClient
    redis: Forwarder  # a's way to Redis
    cancel_url: str
    events_url: str


@asynccontextmanager
async def owner_cut_off(
    launch: Launch, openai_upstream: FakeOpenAIUpstream, postgres_url: str, lease_seconds: int
) -> AsyncIterator[CutOff]:
    """A long run started on a, three of its events read, then a's Redis taken down."""
    redis = Forwarder()
    await redis.up()
    db = 12  # a bus of their own
    common = shared(openai_upstream, postgres_url) | {"RUN_LEASE_SECONDS": str(lease_seconds)}
    direct = reachable_redis_url().rsplit("/", 1)[0]
    a = launch(**common | {"REDIS_URL": f"redis://127.0.0.1:{redis.port}/{db}"})
    b = launch(**common | {"REDIS_URL": f"{direct}/{db}"})
    openai_upstream.enqueue(VERY_LONG)
    try:
        async with (
            httpx.AsyncClient(base_url=a.base_url, timeout=30) as on_a,
            httpx.AsyncClient(base_url=b.base_url, timeout=30) as on_b,
        ):
            cid, run_id, url = await start_run(on_a)
            await read_events(on_a, url, limit=3)
            await redis.down()  # a's Redis connections drop; b's bus is fine
            yield CutOff(on_a, on_b, redis, f"/api/conversations/{cid}/runs/{run_id}/cancel", url)
    finally:
        await redis.down()


async def test_a_cancel_published_while_the_owner_reconnects_reaches_it_once_back(
    launch: Launch, openai_upstream: FakeOpenAIUpstream, postgres_url: str
) -> None:
    # Leases far longer than the test: the owner learns of the cancel from its bus alone.
    async with owner_cut_off(launch, openai_upstream, postgres_url, 900) as cut:
        unconfirmed = await cut.on_b.post(cut.cancel_url)  # published; a hears nothing

        assert unconfirmed.status_code == 503, unconfirmed.text
        assert unconfirmed.json()["error"]["code"] == "run_unreachable"
        assert int(unconfirmed.headers["Retry-After"]) >= 1
        await cut.redis.up()
        frames = await read_events(cut.on_a, cut.events_url)
        again = await cut.on_b.post(cut.cancel_url)
    assert frames[-1].event == "run_end" and frames[-1].data["status"] == "cancelled"
    assert again.status_code == 200 and again.json()["status"] == "cancelled", again.text


async def test_a_cancel_the_owner_never_heard_stops_the_run_at_its_lease_renewal(
    launch: Launch, openai_upstream: FakeOpenAIUpstream, postgres_url: str
) -> None:
    # A lease renewed every second: well within the sender's wait for the run's end; the
    # owner's Redis stays down, so it never hears the cancel on the bus.
    async with owner_cut_off(launch, openai_upstream, postgres_url, 3) as cut:
        cancelled = await cut.on_b.post(cut.cancel_url)

        assert cancelled.status_code == 200, cancelled.text
        assert cancelled.json()["status"] == "cancelled", cancelled.text
        frames = await read_events(cut.on_a, cut.events_url)
    assert frames[-1].event == "run_end" and frames[-1].data["status"] == "cancelled"
