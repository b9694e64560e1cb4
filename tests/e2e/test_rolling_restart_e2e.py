"""A rolling restart behind nginx: two instances on one Postgres and one Redis are replaced
one by one (SIGTERM, start again) while conversations stream through the proxy. No
acknowledged message is lost, every reader ends on a `run_end` (reconnecting with
Last-Event-ID whenever its stream is cut), and no event comes twice or out of order."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from httpx_sse import aconnect_sse

from tests.api.sse_frames import Frame
from tests.e2e.conftest import Launch, Service
from tests.e2e.test_instances_e2e import shared
from tests.e2e.test_nginx_e2e import nginx  # noqa: F401 (the fixture)
from tests.e2e.test_resume_e2e import LONG
from tests.fakes.openai_upstream import Completion, FakeOpenAIUpstream

pytestmark = [pytest.mark.e2e, pytest.mark.postgres]

CONVERSATIONS = 100
Cluster = tuple[httpx.AsyncClient, list[Service]]


@pytest.fixture
async def cluster(
    nginx: tuple[int, list[int]],  # noqa: F811
    launch: Launch,
    openai_upstream: FakeOpenAIUpstream,
    postgres_url: str,
) -> AsyncIterator[Cluster]:
    port, upstreams = nginx
    settings = shared(openai_upstream, postgres_url)
    services = [launch(port=upstream, **settings) for upstream in upstreams]
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as http:
        yield http, services


async def follow_to_the_end(http: httpx.AsyncClient, url: str) -> tuple[list[Frame], int]:
    """Read like an EventSource that reconnects until `run_end`: (frames, reconnects)."""
    frames: list[Frame] = []
    reconnects = -1
    while not frames or frames[-1].event != "run_end":
        reconnects += 1
        assert reconnects < 50, f"no run_end after 50 connections: {frames[-1:]}"
        headers = {"Last-Event-ID": str(frames[-1].id)} if frames else {}
        try:
            async with aconnect_sse(http, "GET", url, headers=headers) as source:
                if source.response.status_code != 200:
                    await asyncio.sleep(0.2)  # 503 while an instance drains
                    continue
                async for sse in source.aiter_sse():
                    if not sse.data:
                        continue  # a heartbeat comment's blank line: EventSource ignores it
                    frame = Frame(int(sse.id) if sse.id else None, sse.event, json.loads(sse.data))
                    if frame.event == "error" and frame.data["code"] == "shutting_down":
                        continue  # "this instance stops: reconnect", not an event of the run
                    assert frame.id is not None, frame
                    frames.append(frame)
        except httpx.TransportError:
            await asyncio.sleep(0.2)
    return frames, reconnects


async def test_a_rolling_restart_loses_nothing_and_repeats_nothing(
    cluster: Cluster, openai_upstream: FakeOpenAIUpstream
) -> None:
    http, services = cluster
    for _ in range(CONVERSATIONS):
        openai_upstream.enqueue(Completion(text=LONG, delay=0.04))  # about 8 s each
    sent: list[tuple[str, str]] = []
    for n in range(CONVERSATIONS):
        cid = (await http.post("/api/conversations", json={})).json()["id"]
        answer = await http.post(f"/api/conversations/{cid}/messages", json={"content": f"#{n}"})
        assert answer.status_code == 202, answer.text
        sent.append((cid, answer.json()["events_url"]))

    readers = [asyncio.create_task(follow_to_the_end(http, url)) for _, url in sent]
    await asyncio.sleep(1)
    for service in services:  # one by one: the other keeps serving meanwhile
        await asyncio.to_thread(service.stop)
        await asyncio.to_thread(service.start)
    results = await asyncio.gather(*readers)

    statuses = []
    for frames, _ in results:
        ids = [f.id or 0 for f in frames]
        assert ids == sorted(set(ids)), "an event came twice or out of order"
        assert frames[-1].event == "run_end"
        statuses.append(frames[-1].data["status"])
    assert set(statuses) <= {"completed", "interrupted"}
    assert sum(reconnects for _, reconnects in results) > 0  # the restarts did cut streams
    for n, (cid, _) in enumerate(sent):
        detail = (await http.get(f"/api/conversations/{cid}")).json()
        users = [m for m in detail["messages"] if m["role"] == "user"]
        assert [_text(m) for m in users] == [f"#{n}"], "an acknowledged message was lost"


def _text(message: dict[str, Any]) -> str:
    content = message["content"]
    if isinstance(content, str):
        return content
    return "".join(p["data"].get("text", "") for p in content if p.get("type") == "text")
