"""The review queue: what waits for the caller across conversations (GET on load) and an
EventSource feed of its changes that resumes with Last-Event-ID. The feed is read from a
real HTTP server on loopback (an in-process ASGI client does not stream)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from app.settings import Settings
from tests.api.sse_frames import Frame, parse
from tests.api.test_approvals import ADA, create, follow, say
from tests.api.test_proposals import _ok, _url
from tests.fakes.db import ApiClient, MakeApi
from tests.support.loopback import served


@pytest.fixture
async def client(make_api: MakeApi, app_settings: Settings) -> AsyncIterator[ApiClient]:
    settings = app_settings.model_copy(
        update={"example_tools_enabled": True, "approval_ttl_seconds": 2.0}
    )
    async with make_api(settings) as api:
        yield api


async def read_frames(
    base: str, count: int, headers: dict[str, str] | None = None, **params: Any
) -> list[Frame]:
    """The first `count` frames of the feed, then hang up."""
    body = ""
    async with (
        httpx.AsyncClient(base_url=base, timeout=10) as http,
        http.stream("GET", "/api/queue/events", params=params, headers=headers) as response,
    ):
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        async for chunk in response.aiter_text():
            body += chunk
            if len(parse(body)) >= count:
                break
    return parse(body)[:count]


async def test_on_load_the_queue_shows_approvals_and_proposals_across_conversations(
    client: ApiClient,
) -> None:
    confirm = await create(client)
    await say(client, confirm, ADA)
    await say(client, confirm, "delete Ada Lovelace")  # a pending approval
    propose = await create(client, mode="propose")
    await say(client, propose, ADA)  # three proposals

    queue = await _ok(await client.get("/api/queue"))

    assert queue["pending"] == {"approvals": 1, "proposals": 3, "total": 4}
    assert [(i["type"], i["conversation_id"]) for i in queue["items"]] == [
        ("approval", confirm),
        ("proposal", propose),
        ("proposal", propose),
        ("proposal", propose),
    ]
    assert queue["items"][0]["tool_name"] == "delete_node"
    assert queue["cursor"] == 4


async def test_the_feed_follows_changes_live_and_resumes_with_last_event_id(
    client: ApiClient,
) -> None:
    cid = await create(client, mode="propose")
    async with served(client.app) as base:
        live = asyncio.create_task(read_frames(base, 1 + 3 + 3 + 3))
        await asyncio.sleep(0.3)  # the stream is open and past its first frame
        await say(client, cid, ADA)
        await _ok(await client.post(_url(cid, "/approve")))
        await _ok(await client.post(_url(cid, "/undo")))
        frames = await asyncio.wait_for(live, 10)

        resumed = await read_frames(base, 3, headers={"Last-Event-ID": str(frames[6].id)})

    assert frames[0].event == "count"
    assert frames[0].id == 0
    assert frames[0].data["pending"]["total"] == 0
    assert [f.event for f in frames[1:]] == ["added"] * 3 + ["applied"] * 3 + ["undone"] * 3
    assert [f.id for f in frames[1:]] == list(range(1, 10))
    assert [f.data["pending"]["proposals"] for f in frames[1:4]] == [1, 2, 3]
    assert frames[6].data["pending"]["total"] == 0
    assert frames[1].data["item"]["type"] == "proposal"
    assert frames[1].data["item"]["conversation_id"] == cid
    assert [f.id for f in resumed] == [7, 8, 9]
    assert [f.data["item"]["status"] for f in resumed] == ["undone"] * 3


async def test_decisions_and_expiries_are_in_the_feed(client: ApiClient) -> None:
    cid = await create(client)
    await say(client, cid, ADA)
    await say(client, cid, "delete Ada Lovelace")
    inbox = (await _ok(await client.get("/api/approvals")))["data"]
    decided = await _ok(
        await client.post(f"/api/approvals/{inbox[0]['id']}", json={"decision": "reject"})
    )
    await follow(client, f"/api/conversations/{cid}/runs/{decided['run_id']}/events")
    await say(client, cid, "delete Ada Lovelace")  # asked again, left to expire
    await asyncio.sleep(2.2)

    queue = await _ok(await client.get("/api/queue"))
    async with served(client.app) as base:
        frames = await read_frames(base, 4, after=0)

    assert queue["pending"]["total"] == 0
    assert [(f.event, f.data["item"]["status"]) for f in frames] == [
        ("added", "pending"),
        ("decided", "rejected"),
        ("added", "pending"),
        ("expired", "expired"),
    ]
    assert frames[0].data["pending"]["approvals"] == 1
