"""Two instances on one Postgres whose Redis (the bus between them) goes away mid-run: a
cancel sent to the instance that does not run the run cannot reach its owner, and says so
with a retryable 503 instead of a 500; once Redis is back the same cancel stops the run."""

from __future__ import annotations

import asyncio

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
