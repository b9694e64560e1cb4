"""Crash recovery frees the concurrent-run slot of each run it closes: a user whose run
died with its process can start the next one as soon as that run is closed, not when the
dead process's slot would have expired. On SQLite and Postgres, with a real Redis."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from app.domain.identity import Caller
from app.domain.messages import Message
from app.limits.limiter import Limiter
from app.limits.policy import LimitPolicy, Limits
from app.limits.redis_backend import RedisBackend
from app.observability.metrics import Metrics
from app.runs.journal import RunJournal
from app.settings import Settings
from tests.fakes.db import ApiClient, MakeApi


async def new_conversation(api: ApiClient) -> str:
    created = await api.post("/api/conversations", json={})
    assert created.status_code == 201, created.text
    cid: str = created.json()["id"]
    return cid


async def leave_a_dead_run(api: ApiClient, user: str, cid: str, redis_url: str) -> None:
    """What a process killed mid-run leaves: its run `running` in the database, and its
    slot in Redis with a lease so long that only an explicit release can free it."""
    await RunJournal(api.services.db, instance_id="killed-mid-run").begin(
        owner_id=user,
        conversation_id=cid,
        run_id="run_dead",
        model_id="scripted",
        assistant_message_id="msg_dead",
        user_message=Message(role="user", content="Still there?"),
    )
    crashed = Limiter(
        LimitPolicy(Limits(concurrent_runs=1), {}),
        RedisBackend.from_url(redis_url),
        Metrics(),
        run_lease_seconds=3600,
    )
    await crashed.acquire_run(Caller(user), "run_dead")
    await crashed.aclose()


async def until_closed(api: ApiClient, cid: str) -> None:
    """Until the conversation's run is closed (recovery ran)."""
    deadline = asyncio.get_running_loop().time() + 10
    while True:
        detail: dict[str, Any] = (await api.get(f"/api/conversations/{cid}")).json()
        if detail["active_run_id"] is None:
            return
        assert asyncio.get_running_loop().time() < deadline, "recovery never closed the run"
        await asyncio.sleep(0.05)


async def test_recovery_frees_the_slot_of_the_run_it_closes(
    make_api: MakeApi, app_settings: Settings, redis_url: str
) -> None:
    user = f"user-{uuid.uuid4().hex}"
    settings = app_settings.model_copy(
        update={
            "redis_url": redis_url,
            "rate_limit_concurrent_runs": 1,
            "run_lease_seconds": 1.0,
            "local_user_id": user,
        }
    )
    async with make_api(settings) as api:
        dead_cid = await new_conversation(api)
        await leave_a_dead_run(api, user, dead_cid, redis_url)
        cid = await new_conversation(api)
        while_held = await api.post(f"/api/conversations/{cid}/messages", json={"content": "Hi"})
        await until_closed(api, dead_cid)
        after = await api.post(f"/api/conversations/{cid}/messages", json={"content": "Hi"})

    assert while_held.status_code == 429
    assert while_held.json()["error"]["limit"] == "concurrent_runs"
    assert after.status_code == 202, after.text
