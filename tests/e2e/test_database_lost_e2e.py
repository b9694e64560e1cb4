"""Postgres out of reach under a live process: it ends the service's connections under
its statements (a restart, a failover, `pg_terminate_backend`), or refuses new ones (down,
starting). The requests caught there answer 503 `database_unavailable` with Retry-After,
never 500; once the database is back every request works again and nothing stored is
lost."""

from __future__ import annotations

import asyncio
from collections import Counter

import httpx
import pytest
from sqlalchemy.engine import make_url

from tests.e2e.conftest import Launch
from tests.fakes.db import end_connections
from tests.unit.runs.test_redis_bus import Forwarder

pytestmark = [pytest.mark.e2e, pytest.mark.postgres]

STORM_SECONDS = 3.0


def refused_retry_later(answer: httpx.Response) -> None:
    assert answer.status_code == 503, answer.text
    assert answer.json()["error"]["code"] == "database_unavailable"
    assert int(answer.headers["Retry-After"]) >= 1


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
            refused_retry_later(refused)
        after = await asyncio.gather(*(http.get(f"/api/conversations/{cid}") for _ in range(20)))
        assert [r.status_code for r in after] == [200] * 20
        assert after[0].json()["title"] == "kept"
        created = [r.json()["id"] for r in answers if r.status_code == 201]
        for stored in await asyncio.gather(*(http.get(f"/api/conversations/{c}") for c in created)):
            assert stored.status_code == 200, stored.text
    assert "unhandled error" not in service.logs()


async def test_while_postgres_refuses_connections_requests_are_a_retryable_503(
    launch: Launch, postgres_url: str
) -> None:
    url = make_url(postgres_url)
    postgres = Forwarder(target=url.port or 5432)  # a Postgres of our own to take down
    await postgres.up()
    behind = url.set(port=postgres.port).render_as_string(hide_password=False)
    try:
        # In a thread: the forwarder answers on this loop while the service starts.
        service = await asyncio.to_thread(launch, DATABASE_URL=behind)
        async with httpx.AsyncClient(base_url=service.base_url, timeout=15) as http:
            cid = (await http.post("/api/conversations", json={"title": "kept"})).json()["id"]
            await postgres.down()

            for _ in range(2):  # the pooled connections ended, then new ones refused
                refused_retry_later(await http.get(f"/api/conversations/{cid}"))
                refused_retry_later(await http.get("/api/conversations"))
                refused_retry_later(await http.post("/api/conversations", json={}))
            assert (await http.get("/readyz")).status_code == 503

            await postgres.up()
            again = await http.get(f"/api/conversations/{cid}")
            assert again.status_code == 200, again.text
            assert again.json()["title"] == "kept"
    finally:
        await postgres.down()
    assert "unhandled error" not in service.logs()
