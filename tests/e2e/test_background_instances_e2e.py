"""Background jobs over two chat-bff processes on one Postgres database and one Redis.

A cancel received by the instance that does not run the job stops the job's task on the
other at once, through the bus (the leases here are renewed far less often than the test
waits, so only the bus can have told it). The per-user and global caps hold over both
instances: calls made at the same moment on either never run more jobs than allowed."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest

from tests.api.runs.test_background_tools import eventually
from tests.e2e.conftest import Launch, openai_backed
from tests.fakes.openai_upstream import Completion, FakeOpenAIUpstream, ToolCall
from tests.limits.conftest import reachable_redis_url

pytestmark = [pytest.mark.e2e, pytest.mark.postgres]

Pair = tuple[httpx.AsyncClient, httpx.AsyncClient]
# Leases renewed every 200 s: a job stopped within the test's wait was told by the bus.
LEASE = "600"
JOBS = "/api/background-jobs"


@asynccontextmanager
async def instances(
    launch: Launch, upstream: FakeOpenAIUpstream, postgres_url: str, **extra: str
) -> AsyncIterator[Pair]:
    settings = openai_backed(
        upstream.base_url,
        DATABASE_URL=postgres_url,
        REDIS_URL=reachable_redis_url(),
        RATE_LIMIT_REQUESTS_PER_MINUTE="0",
        RATE_LIMIT_CONCURRENT_RUNS="0",
        TOOL_MODULES='["tests.support.background_tools"]',
        RUN_LEASE_SECONDS=LEASE,
        **extra,
    )
    a, b = launch(**settings), launch(**settings)
    async with (
        httpx.AsyncClient(base_url=a.base_url, timeout=30) as on_a,
        httpx.AsyncClient(base_url=b.base_url, timeout=30) as on_b,
    ):
        yield on_a, on_b


async def turn(http: httpx.AsyncClient, content: str) -> str:
    """A conversation whose turn has ended; its id."""
    cid: str = (await http.post("/api/conversations", json={})).json()["id"]
    started = await http.post(f"/api/conversations/{cid}/messages", json={"content": content})
    assert started.status_code == 202, started.text

    async def ended() -> bool:
        detail = (await http.get(f"/api/conversations/{cid}")).json()
        return detail["active_run_id"] is None and len(detail["messages"]) >= 2

    await eventually(ended, timeout=60)
    return cid


def report_call(call_id: str, seconds: float = 600) -> Completion:
    return Completion(tool_calls=[ToolCall("watched_report", {"seconds": seconds}, id=call_id)])


async def test_a_cancel_through_b_stops_the_job_running_on_a(
    launch: Launch, openai_upstream: FakeOpenAIUpstream, postgres_url: str, tmp_path: Path
) -> None:
    stopped = tmp_path / "stopped"
    stopped.mkdir()
    openai_upstream.enqueue(report_call("call_far"), Completion(text="The report was stopped."))
    async with instances(
        launch, openai_upstream, postgres_url, TEST_STOPPED_JOBS_DIR=str(stopped)
    ) as (on_a, on_b):
        await turn(on_a, "Build the report.")
        (job,) = (await on_b.get(JOBS)).json()["data"]
        assert job["status"] == "running"

        cancelled = await on_b.post(f"{JOBS}/{job['id']}/cancel")

        assert cancelled.status_code == 200, cancelled.text
        assert cancelled.json()["status"] == "cancelled"
        await eventually(lambda: asyncio.sleep(0, (stopped / "call_far").exists()), timeout=30)
        assert (await on_a.get(f"{JOBS}/{job['id']}")).json()["status"] == "cancelled"


@pytest.mark.parametrize(
    "caps", [{"BACKGROUND_TOOLS_PER_USER": "2"}, {"BACKGROUND_TOOLS_TOTAL": "2"}], ids=str
)
async def test_calls_at_the_same_moment_on_both_instances_never_run_more_than_the_cap(
    launch: Launch, openai_upstream: FakeOpenAIUpstream, postgres_url: str, caps: dict[str, str]
) -> None:
    calls = 8
    openai_upstream.enqueue(*(report_call(f"call_{n}") for n in range(calls)))
    # A refused call is an error result the model reads: it answers, and the turn ends.
    openai_upstream.default = Completion(text="Could not start it now.")
    async with instances(launch, openai_upstream, postgres_url, **caps) as (on_a, on_b):
        await asyncio.gather(*(turn((on_a, on_b)[n % 2], f"Report {n}") for n in range(calls)))

        jobs = (await on_a.get(JOBS)).json()["data"]

    assert [j["status"] for j in jobs] == ["running", "running"]
    refusals = [
        body
        for body in openai_upstream.request_bodies()
        if "background tasks" in str(body.get("messages", [])[-1:])
    ]
    assert len(refusals) == calls - 2
