"""Postgres ending the service's connections under its statements (a restart, a failover,
`pg_terminate_backend`): the requests caught there answer 503 `database_unavailable` with
Retry-After, never 500, and once the database is back every request works again."""

from __future__ import annotations

import asyncio
from collections import Counter

import httpx
import pytest

from tests.e2e.conftest import Launch
from tests.fakes.db import end_connections

pytestmark = [pytest.mark.e2e, pytest.mark.postgres]

STORM_SECONDS = 3.0


async def test_requests_under_ended_connections_are_a_retryable_503_never_a_500(
    launch: Launch, postgres_url: str
) -> None:
    service = launch(DATABASE_URL=postgres_url, RATE_LIMIT_REQUESTS_PER_MINUTE="0")
    async with httpx.AsyncClient(base_url=service.base_url, timeout=15) as http:
        cid = (await http.post("/api/conversations", json={"title": "kept"})).json()["id"]
        answers: list[httpx.Response] = []
        storming = True

        async def storm() -> None:
            while storming:
                await end_connections(postgres_url)
                await asyncio.sleep(0.005)

        async def load() -> None:
            while storming:
                answers.extend(
                    await asyncio.gather(
                        *(http.get(f"/api/conversations/{cid}") for _ in range(6)),
                        http.get("/api/conversations"),
                        http.post("/api/conversations", json={}),
                    )
                )

        tasks = [asyncio.create_task(storm()), asyncio.create_task(load())]
        await asyncio.sleep(STORM_SECONDS)
        storming = False
        await asyncio.gather(*tasks)

        statuses = Counter(r.status_code for r in answers)
        assert set(statuses) <= {200, 201, 503}, statuses
        assert statuses[503], f"the storm never caught a statement: {statuses}"
        for refused in (r for r in answers if r.status_code == 503):
            assert refused.json()["error"]["code"] == "database_unavailable"
            assert int(refused.headers["Retry-After"]) >= 1
        after = await asyncio.gather(*(http.get(f"/api/conversations/{cid}") for _ in range(20)))
        assert [r.status_code for r in after] == [200] * 20
        assert after[0].json()["title"] == "kept"
    assert "unhandled error" not in service.logs()
