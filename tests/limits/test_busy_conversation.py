"""A send to a conversation whose run is still going is 409 `run_active` naming that run,
as the wire contract states, also when the caller has no run slot left: the second tab
(or a double click) learns which run to follow instead of a 429 about runs elsewhere. With
the process's own counts and with a real Redis, on SQLite and Postgres."""

from __future__ import annotations

import uuid

import pytest

from app.settings import Settings
from tests.fakes.db import MakeApi


@pytest.fixture(params=["process", "redis"])
def limit_store(request: pytest.FixtureRequest) -> str | None:
    if request.param == "process":
        return None
    url: str = request.getfixturevalue("redis_url")
    return url


async def test_a_send_to_a_busy_conversation_names_its_run_at_the_run_limit(
    make_api: MakeApi, app_settings: Settings, limit_store: str | None
) -> None:
    settings = app_settings.model_copy(
        update={
            "redis_url": limit_store,
            "rate_limit_concurrent_runs": 1,
            "local_user_id": f"user-{uuid.uuid4().hex}",
            # Slow enough that the first run is still going when the second send arrives.
            "scripted_delay_ms": 200.0,
        }
    )
    async with make_api(settings) as api:
        cid = (await api.post("/api/conversations", json={})).json()["id"]
        first = await api.post(f"/api/conversations/{cid}/messages", json={"content": "Hi"})
        assert first.status_code == 202, first.text
        run_id = first.json()["run_id"]

        again = await api.post(f"/api/conversations/{cid}/messages", json={"content": "Hi"})
        elsewhere = (await api.post("/api/conversations", json={})).json()["id"]
        other = await api.post(f"/api/conversations/{elsewhere}/messages", json={"content": "Hi"})
        await api.post(f"/api/conversations/{cid}/runs/{run_id}/cancel")

    assert again.status_code == 409, again.text
    assert again.json()["error"]["code"] == "run_active"
    assert again.json()["error"]["active_run_id"] == run_id
    # Another conversation is still held to the limit.
    assert other.status_code == 429, other.text
    assert other.json()["error"]["limit"] == "concurrent_runs"
