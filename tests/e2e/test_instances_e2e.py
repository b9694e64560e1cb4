"""Two chat-bff processes on one Postgres database and one Redis: a run started on A is
followed on B live, gap-free and in order, resumed on B with Last-Event-ID, cancelled
through B; a purge through B leaves nothing of it served by A. A conversation followed on
B (`/api/conversations/{id}/events`) sees A's runs start, stream and end live, and
resumes on A across runs."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import httpx
import pytest

from tests.e2e.conftest import Launch, openai_backed
from tests.e2e.test_follow_e2e import follow, run_ends
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


async def test_a_conversation_followed_on_b_sees_the_runs_of_a_live_and_resumes_on_a(
    pair: Pair, openai_upstream: FakeOpenAIUpstream
) -> None:
    on_a, on_b = pair
    openai_upstream.enqueue(Completion(text=LONG, delay=0.01), Completion(text="And more."))
    cid = (await on_a.post("/api/conversations", json={})).json()["id"]

    async with follow(on_b, cid) as tab:
        await tab.wait_for(lambda events: len(events) >= 1)
        first = await on_a.post(f"/api/conversations/{cid}/messages", json={"content": "1"})
        await tab.wait_for(lambda events: run_ends(events) == ["completed"])
        second = await on_a.post(f"/api/conversations/{cid}/messages", json={"content": "2"})
        seen = await tab.wait_for(lambda events: run_ends(events) == ["completed"] * 2)

    starts = [e.data["run_id"] for e in seen if e.event == "run_start"]
    assert starts == [first.json()["run_id"], second.json()["run_id"]]
    assert "".join(e.data["delta"] for e in seen if e.event == "text_delta") == LONG + "And more."
    cut = 12  # in the middle of the first run
    async with follow(on_a, cid, last_event_id=seen[cut - 1].id) as again:
        rest = await again.wait_for(lambda events: len(events) >= 1 + len(seen) - cut)
    assert rest[1:] == seen[cut:]
