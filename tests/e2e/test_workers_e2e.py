"""`uvicorn --workers 2` on Postgres and Redis: each request lands on either worker (a new
connection each time), and runs, readers, resumes and cancels behave as on one process."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import asyncpg  # type: ignore[import-untyped]
import httpx
import pytest

from tests.e2e.conftest import Launch
from tests.e2e.test_instances_e2e import shared
from tests.e2e.test_resume_e2e import LONG, assert_gap_free, read_events, start_run, text_of
from tests.fakes.openai_upstream import Completion, FakeOpenAIUpstream

pytestmark = [pytest.mark.e2e, pytest.mark.postgres]

RUNS = 6
# On a quiet machine one idle worker may accept several batches in a row; each try is
# cheap (six short runs), so try long enough that only a broken split fails.
MAX_BATCHES = 12


@pytest.fixture
async def workers(
    launch: Launch, openai_upstream: FakeOpenAIUpstream, postgres_url: str
) -> AsyncIterator[httpx.AsyncClient]:
    service = launch(
        args=("--workers", "2"),
        **shared(openai_upstream, postgres_url),
    )
    # No connection is reused: the kernel hands each one to whichever worker accepts it.
    fresh = httpx.Limits(max_keepalive_connections=0)
    async with httpx.AsyncClient(base_url=service.base_url, timeout=15, limits=fresh) as http:
        yield http
    assert service.stop() == 0


async def _owners(postgres_url: str) -> set[str]:
    connection = await asyncpg.connect(postgres_url.replace("+asyncpg", ""))
    try:
        return {r["instance_id"] for r in await connection.fetch("SELECT instance_id FROM runs")}
    finally:
        await connection.close()


async def test_runs_readers_and_resumes_are_whole_whichever_worker_serves_them(
    workers: httpx.AsyncClient, openai_upstream: FakeOpenAIUpstream, postgres_url: str
) -> None:
    # Start runs in concurrent batches until both workers own some (the kernel decides which
    # worker accepts a connection; on a busy machine one may take a whole batch).
    started: list[tuple[str, str, str]] = []
    for _ in range(MAX_BATCHES):
        for _ in range(RUNS):
            openai_upstream.enqueue(Completion(text=LONG, delay=0.005))
        started += await asyncio.gather(*(start_run(workers) for _ in range(RUNS)))
        if len(await _owners(postgres_url)) == 2:
            break
    assert len(await _owners(postgres_url)) == 2, "one worker accepted every connection"

    for _, _, url in started:
        one, two, first_ten = await asyncio.gather(
            read_events(workers, url),
            read_events(workers, url),
            read_events(workers, url, limit=10),
        )
        rest = await read_events(workers, url, after=10)
        assert_gap_free(one)
        assert one == two == first_ten + rest
        assert one[-1].event == "run_end" and text_of(one) == LONG


async def test_a_cancel_reaches_the_worker_running_the_run(
    workers: httpx.AsyncClient, openai_upstream: FakeOpenAIUpstream
) -> None:
    openai_upstream.enqueue(Completion(text=LONG, delay=0.05))
    cid, run_id, url = await start_run(workers)
    await read_events(workers, url, limit=3)

    statuses = [
        (await workers.post(f"/api/conversations/{cid}/runs/{run_id}/cancel")).json()["status"]
        for _ in range(3)  # whichever worker each lands on
    ]

    assert statuses == ["cancelled"] * 3
    frames = await read_events(workers, url)
    assert frames[-1].data["status"] == "cancelled"
