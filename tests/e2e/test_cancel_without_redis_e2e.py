"""Two chat-bff processes on one Postgres database and no Redis: a cancel sent to B for a
run A runs is kept on the run's row, A stops the run at its next lease renewal, and a
client following the run on B sees it end cancelled while B answers the final status."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from tests.e2e.conftest import Launch
from tests.e2e.test_bus_down_e2e import VERY_LONG
from tests.e2e.test_instances_e2e import shared
from tests.e2e.test_resume_e2e import read_events, start_run, text_of
from tests.fakes.openai_upstream import FakeOpenAIUpstream

pytestmark = [pytest.mark.e2e, pytest.mark.postgres]


async def test_a_cancel_through_b_stops_the_run_on_a_and_bs_reader_sees_it_end(
    launch: Launch, openai_upstream: FakeOpenAIUpstream, postgres_url: str
) -> None:
    settings = shared(openai_upstream, postgres_url) | {"RUN_LEASE_SECONDS": "3"}
    del settings["REDIS_URL"]
    a, b = launch(**settings), launch(**settings)
    openai_upstream.enqueue(VERY_LONG)  # 30 s of tokens
    async with (
        httpx.AsyncClient(base_url=a.base_url, timeout=30) as on_a,
        httpx.AsyncClient(base_url=b.base_url, timeout=30) as on_b,
    ):
        cid, run_id, url = await start_run(on_a)
        await read_events(on_a, url, limit=3)
        following = asyncio.create_task(read_events(on_b, url))

        cancelled = await on_b.post(f"/api/conversations/{cid}/runs/{run_id}/cancel")

        assert cancelled.status_code == 200, cancelled.text
        assert cancelled.json()["status"] == "cancelled"
        frames = await asyncio.wait_for(following, timeout=20)
        assert frames[-1].event == "run_end" and frames[-1].data["status"] == "cancelled"
        assert frames == await read_events(on_a, url)
        assert len(text_of(frames)) < len(" ".join(f"token{i}" for i in range(600)))
