"""Two chat-bff processes on one Postgres database and one Redis: a run started on A is
followed on B live, gap-free and in order, resumed on B with Last-Event-ID, cancelled
through B; a purge through B leaves nothing of it served by A."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import httpx
import pytest

from tests.e2e.conftest import Launch, openai_backed
from tests.e2e.test_resume_e2e import LONG, assert_gap_free, read_events, start_run, text_of
from tests.fakes.openai_upstream import Completion, FakeOpenAIUpstream
from tests.limits.conftest import reachable_redis_url

pytestmark = [pytest.mark.e2e, pytest.mark.postgres]

Pair = tuple[httpx.AsyncClient, httpx.AsyncClient]


def shared(
    upstream: FakeOpenAIUpstream, postgres_url: str, runs_at_once: int = 0
) -> dict[str, str]:
    """Settings of instances sharing one Postgres database and one Redis."""
    return openai_backed(
        upstream.base_url,
        DATABASE_URL=postgres_url,
        REDIS_URL=reachable_redis_url(),
        RATE_LIMIT_REQUESTS_PER_MINUTE="0",
        RATE_LIMIT_CONCURRENT_RUNS=str(runs_at_once),
    )


@pytest.fixture
async def pair(
    launch: Launch, openai_upstream: FakeOpenAIUpstream, postgres_url: str
) -> AsyncIterator[Pair]:
    settings = shared(openai_upstream, postgres_url)
    a, b = launch(**settings), launch(**settings)
    async with (
        httpx.AsyncClient(base_url=a.base_url, timeout=15) as on_a,
        httpx.AsyncClient(base_url=b.base_url, timeout=15) as on_b,
    ):
        yield on_a, on_b


async def test_a_run_on_a_is_followed_live_on_b_and_resumed_there(
    pair: Pair, openai_upstream: FakeOpenAIUpstream
) -> None:
    on_a, on_b = pair
    openai_upstream.enqueue(Completion(text=LONG, delay=0.01))
    _, _, url = await start_run(on_a)

    # B from the start, and a reader on B that drops after 10 events and resumes there.
    whole_b, whole_a, first_ten = await asyncio.gather(
        read_events(on_b, url), read_events(on_a, url), read_events(on_b, url, limit=10)
    )
    assert [f.id for f in first_ten] == list(range(1, 11))
    resumed = await read_events(on_b, url, after=10)

    assert_gap_free(whole_b)
    assert whole_b[-1].event == "run_end" and whole_b[-1].data["status"] == "completed"
    assert whole_b == whole_a
    assert text_of(whole_b) == LONG
    assert first_ten + resumed == whole_a


async def test_a_cancel_through_b_stops_the_run_on_a_and_a_purge_through_b_forgets_it(
    pair: Pair, openai_upstream: FakeOpenAIUpstream
) -> None:
    on_a, on_b = pair
    openai_upstream.enqueue(Completion(text=LONG, delay=0.05))
    cid, run_id, url = await start_run(on_a)
    await read_events(on_a, url, limit=3)

    cancelled = await on_b.post(f"/api/conversations/{cid}/runs/{run_id}/cancel")

    assert cancelled.status_code == 200, cancelled.text
    assert cancelled.json()["status"] == "cancelled"
    frames = await read_events(on_a, url)
    assert frames[-1].event == "run_end" and frames[-1].data["status"] == "cancelled"
    assert len(text_of(frames)) < len(LONG)

    purged = await on_b.delete(f"/api/conversations/{cid}", params={"purge": "true"})
    assert purged.status_code == 204
    assert (await on_a.get(url)).status_code == 404
