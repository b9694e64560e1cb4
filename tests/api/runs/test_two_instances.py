"""Two instances on one database and one Redis (the real one on 127.0.0.1): a run started
on A is followed live on B, in order and without gaps, resumed on B with Last-Event-ID,
cancelled through B (also while A's connection to Redis went silent), and a purge through
B leaves nothing of it in A's memory."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import AsyncExitStack, aclosing, asynccontextmanager
from typing import Any, cast

import pytest

from app.domain.events import SequencedEvent
from app.providers.scripted import Script, ScriptedProvider, ScriptedTurn
from app.settings import Settings
from tests.api.runs.helpers import CONVERSATIONS, conversation, create, events, play, send, until
from tests.api.sse_frames import Frame
from tests.fakes.db import ApiClient, MakeApi
from tests.limits.conftest import reachable_redis_url
from tests.unit.runs.test_redis_bus import Forwarder

WORDS = " ".join(f"word{n}" for n in range(60))


@asynccontextmanager
async def instances(
    make_api: MakeApi, app_settings: Settings, **update: Any
) -> AsyncIterator[list[ApiClient]]:
    """Two instances on one database, unlimited, with these settings changed."""
    limits = {"rate_limit_requests_per_minute": 0, "rate_limit_concurrent_runs": 0}
    settings = app_settings.model_copy(update=limits | update)
    async with AsyncExitStack() as stack:
        yield [
            await stack.enter_async_context(
                make_api(settings, providers={"scripted": ScriptedProvider(Script(turns=[]))})
            )
            for _ in range(2)
        ]


@pytest.fixture
async def pair(make_api: MakeApi, app_settings: Settings) -> AsyncIterator[list[ApiClient]]:
    async with instances(make_api, app_settings, redis_url=reachable_redis_url()) as clients:
        yield clients


async def streaming(a: ApiClient, delay_ms: float) -> tuple[str, dict[str, Any]]:
    """A run started on A, its first text already out."""
    play(a, ScriptedTurn(text=WORDS, delay_ms=delay_ms))
    cid = await create(a)
    started = await send(a, cid)
    await until(a, cid, started["run_id"], "text_delta")
    return cid, started


def assert_gap_free(frames: list[Frame], first: int = 1) -> None:
    assert [f.id for f in frames] == list(range(first, first + len(frames)))
    assert frames[-1].event == "run_end"


async def test_a_run_on_one_instance_is_followed_live_on_the_other(
    pair: list[ApiClient],
) -> None:
    a, b = pair
    play(a, ScriptedTurn(text=WORDS, delay_ms=10))
    cid = await create(a)
    started = await send(a, cid)
    owner = a.services.settings.local_user_id

    # B hears the events long before A's batched writer stores them (it waits up to 1 s).
    followed = b.services.runs.follow(owner, started["run_id"], conversation_id=cid)
    async with aclosing(cast("AsyncGenerator[list[SequencedEvent]]", followed)):
        first = await anext(followed)
        stored = await a.services.runs.manager._journal.events_after(started["run_id"], 0)
    assert first and len(stored) < first[-1].seq

    on_b = await events(b, started["events_url"])
    on_a = await events(a, started["events_url"])
    assert_gap_free(on_b)
    assert on_b == on_a
    assert "".join(f.data["delta"] for f in on_b if f.event == "text_delta") == WORDS


async def test_a_reader_resumes_on_the_other_instance_with_last_event_id(
    pair: list[ApiClient],
) -> None:
    a, b = pair
    _, started = await streaming(a, delay_ms=10)

    resumed = await events(b, started["events_url"], **{"Last-Event-ID": "3"})

    assert_gap_free(resumed, first=4)
    assert resumed == (await events(a, started["events_url"]))[3:]


async def test_a_cancel_sent_to_the_other_instance_stops_the_run(
    pair: list[ApiClient],
) -> None:
    a, b = pair
    cid, started = await streaming(a, delay_ms=200)

    response = await b.post(f"{CONVERSATIONS}/{cid}/runs/{started['run_id']}/cancel")

    assert response.status_code == 200
    assert response.json()["status"] == "cancelled"
    frames = await events(a, started["events_url"])
    assert frames[-1].data["status"] == "cancelled"
    assert (await conversation(b, cid))["active_run_id"] is None


async def test_a_cancel_the_owner_missed_on_a_silent_connection_stops_the_run_promptly(
    make_api: MakeApi, app_settings: Settings
) -> None:
    # A's way to Redis drops every byte without closing (a partition, a NAT that forgot
    # the flow): B's cancel is published and lost. Leases far longer than the test, so
    # only A noticing its dead connection (and reading the kept cancel) can stop the run
    # within B's wait.
    redis = Forwarder()
    await redis.up()
    limits = {
        "rate_limit_requests_per_minute": 0,
        "rate_limit_concurrent_runs": 0,
        "run_lease_seconds": 900.0,
        "redis_timeout_seconds": 0.5,
    }
    on = {"a": f"redis://127.0.0.1:{redis.port}/0", "b": reachable_redis_url()}
    try:
        async with AsyncExitStack() as stack:
            a, b = [
                await stack.enter_async_context(
                    make_api(
                        app_settings.model_copy(update=limits | {"redis_url": on[name]}),
                        providers={"scripted": ScriptedProvider(Script(turns=[]))},
                    )
                )
                for name in ("a", "b")
            ]
            cid, started = await streaming(a, delay_ms=500)
            redis.frozen = True

            response = await b.post(f"{CONVERSATIONS}/{cid}/runs/{started['run_id']}/cancel")

            assert response.status_code == 200, response.text
            assert response.json()["status"] == "cancelled"
            redis.frozen = False
            frames = await events(a, started["events_url"])
    finally:
        await redis.down()
    assert frames[-1].data["status"] == "cancelled"


async def test_a_purge_on_the_other_instance_empties_the_owners_memory(
    pair: list[ApiClient],
) -> None:
    a, b = pair
    play(a, ScriptedTurn(text="A short answer.", delay_ms=0))
    cid = await create(a)
    started = await send(a, cid)
    await events(a, started["events_url"])
    manager = a.services.runs.manager
    assert manager.local(started["run_id"]) is not None  # kept for quick resumes

    assert (await b.delete(f"{CONVERSATIONS}/{cid}", params={"purge": "true"})).status_code == 204

    for _ in range(100):
        if manager.local(started["run_id"]) is None:
            break
        await asyncio.sleep(0.02)
    assert manager.local(started["run_id"]) is None
    assert (await a.get(started["events_url"])).status_code == 404
