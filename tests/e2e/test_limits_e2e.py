"""Limits across a crash, with real processes and a real Redis: a user whose run died with
its process (kill -9) is not held at 429 by the dead run's slot once a new process has
closed the run (conversation runs) or within one lease (stateless runs)."""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

import httpx
import pytest

from tests.e2e.conftest import Launch, Service, openai_backed
from tests.fakes.openai_upstream import Completion, FakeOpenAIUpstream
from tests.limits.conftest import reachable_redis_url

pytestmark = pytest.mark.e2e


@pytest.fixture
def redis_url() -> str:
    return reachable_redis_url()


SLOW = Completion(text=" ".join(f"token{i}" for i in range(400)), delay=0.05)  # 20 s


def one_run_at_a_time(upstream: FakeOpenAIUpstream, redis: str, **extra: str) -> dict[str, str]:
    """A fresh user (so Redis counts nothing of other tests) allowed one run at a time."""
    return openai_backed(
        upstream.base_url,
        REDIS_URL=redis,
        RATE_LIMIT_CONCURRENT_RUNS="1",
        LOCAL_USER_ID=f"user-{uuid.uuid4().hex}",
        **extra,
    )


async def new_conversation(http: httpx.AsyncClient) -> str:
    created = await http.post("/api/conversations", json={})
    assert created.status_code == 201, created.text
    cid: str = created.json()["id"]
    return cid


async def until_streaming(http: httpx.AsyncClient, url: str) -> None:
    """Until the run has sent some text (it is mid-run, holding its slot)."""
    async with http.stream("GET", url) as events:
        async for line in events.aiter_lines():
            if line == "event: text_delta":
                return


def kill(service: Service) -> None:
    service.kill()
    assert service.proc is not None and service.proc.returncode == -9


async def test_a_run_killed_with_its_process_leaves_no_slot_once_recovery_closed_it(
    launch: Launch, openai_upstream: FakeOpenAIUpstream, redis_url: str
) -> None:
    openai_upstream.enqueue(SLOW, Completion(text="Back again."))
    # Its slots are 60 s leases: only recovery can free the killed run's slot in time.
    env = one_run_at_a_time(openai_upstream, redis_url, RUN_LEASE_SECONDS="60")
    first = launch(**env)
    async with httpx.AsyncClient(base_url=first.base_url, timeout=10) as http:
        cid = await new_conversation(http)
        started = await http.post(f"/api/conversations/{cid}/messages", json={"content": "Go"})
        assert started.status_code == 202, started.text
        await until_streaming(http, started.json()["events_url"])
        other = await new_conversation(http)
        while_running = await http.post(
            f"/api/conversations/{other}/messages", json={"content": "And this?"}
        )
    kill(first)

    # The new process takes dead runs over after 1 s without a heartbeat, long before the
    # killed process's slot would lapse by itself.
    second = launch(db=first.db, **{**env, "RUN_LEASE_SECONDS": "1"})
    async with httpx.AsyncClient(base_url=second.base_url, timeout=10) as http:
        await until_closed(http, cid)
        after = await http.post(f"/api/conversations/{other}/messages", json={"content": "Now?"})

    assert while_running.status_code == 429
    assert after.status_code == 202, after.text


async def test_a_stateless_run_killed_with_its_process_frees_its_slot_within_a_lease(
    launch: Launch, openai_upstream: FakeOpenAIUpstream, redis_url: str
) -> None:
    openai_upstream.enqueue(SLOW, Completion(text="Back again."))
    env = one_run_at_a_time(openai_upstream, redis_url, RUN_LEASE_SECONDS="1")
    chat = {"messages": [{"role": "user", "content": "Go"}]}
    first = launch(**env)
    async with httpx.AsyncClient(base_url=first.base_url, timeout=10) as http:
        streaming = asyncio.Event()
        # The stream stays open (a stateless run ends when its client hangs up).
        reader = asyncio.create_task(read_stream(http, {**chat, "stream": True}, streaming))
        await asyncio.wait_for(streaming.wait(), timeout=10)
        while_running = await http.post("/api/chat", json=chat)
        kill(first)
        await asyncio.wait_for(reader, timeout=10)

    second = launch(db=first.db, **env)
    async with httpx.AsyncClient(base_url=second.base_url, timeout=10) as http:
        answer = await until_admitted(http, chat)

    assert while_running.status_code == 429
    assert answer.status_code == 200, answer.text


async def read_stream(
    http: httpx.AsyncClient, body: dict[str, Any], streaming: asyncio.Event
) -> None:
    try:
        async with http.stream("POST", "/api/chat", json=body) as live:
            async for line in live.aiter_lines():
                if line == "event: text_delta":
                    streaming.set()
    except httpx.TransportError:
        pass  # the process was killed under the stream


async def until_closed(http: httpx.AsyncClient, cid: str) -> None:
    deadline = time.monotonic() + 20
    while True:
        detail: dict[str, Any] = (await http.get(f"/api/conversations/{cid}")).json()
        if detail["active_run_id"] is None:
            return
        assert time.monotonic() < deadline, "the killed process's run was never closed"
        await asyncio.sleep(0.1)


async def until_admitted(http: httpx.AsyncClient, chat: dict[str, Any]) -> httpx.Response:
    deadline = time.monotonic() + 20
    while True:
        answer = await http.post("/api/chat", json=chat)
        if answer.status_code != 429:
            return answer
        assert time.monotonic() < deadline, "the killed process's slot never lapsed"
        await asyncio.sleep(0.2)
