"""A Redis that hangs (stopped: it accepts connections and answers nothing) under a real
process: the first call that meets it waits out the timeout, the requests after it skip
Redis (the limits let them through at once, the bus's announcements and a run's
published events fail at once)
instead of each waiting the timeout again."""

from __future__ import annotations

import json

import httpx
import pytest

from tests.e2e.conftest import Launch
from tests.e2e.redis_server import own_redis
from tests.e2e.test_resume_e2e import read_events, start_run

pytestmark = pytest.mark.e2e


def timeouts(logs: str) -> list[dict[str, object]]:
    """The log records of calls that waited out Redis's timeout (the breaker's own record
    of opening aside)."""
    records = [json.loads(line) for line in logs.splitlines() if line.startswith("{")]
    return [
        r
        for r in records
        if r.get("error_type") == "TimeoutError" and r["logger"] != "chat_bff.redis"
    ]


async def test_requests_stop_paying_the_timeout_of_a_hung_redis(launch: Launch) -> None:
    with own_redis() as redis:
        service = launch(
            REDIS_URL=redis.url,
            RATE_LIMIT_REQUESTS_PER_MINUTE="10000",
            REDIS_TIMEOUT_SECONDS="1",
            REDIS_RETRY_SECONDS="120",  # no probe within the test, however slow the machine
        )
        async with httpx.AsyncClient(base_url=service.base_url, timeout=30) as http:
            assert (await http.get("/api/conversations")).status_code == 200
            redis.hang()
            for _ in range(5):  # each a limit check
                assert (await http.get("/api/conversations")).status_code == 200
            for _ in range(3):  # each a limit check and a commit announced on the bus
                assert (await http.post("/api/conversations", json={})).status_code == 201
            # A run: its commits announced and its events published on the bus.
            _, _, url = await start_run(http)
            frames = await read_events(http, url)
            assert frames[-1].event == "run_end" and frames[-1].data["status"] == "completed"
            redis.resume()
    waited = timeouts(service.logs())
    assert len(waited) == 1, waited
    assert "Redis did not answer; skipping it for a while" in service.logs()
