"""Resume end to end: an EventSource-style client that reconnects with Last-Event-ID,
and runs that survive a restart of the service (SIGTERM, and kill -9)."""

from __future__ import annotations

import asyncio
import json
import signal
import sqlite3
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from httpx_sse import aconnect_sse

from tests.api.sse_frames import Frame
from tests.e2e.conftest import Launch, Service, openai_backed
from tests.fakes.openai_upstream import Completion, FakeOpenAIUpstream

pytestmark = pytest.mark.e2e

LONG = " ".join(f"token{i}" for i in range(200))


async def start_run(http: httpx.AsyncClient) -> tuple[str, str, str]:
    """A new conversation with a run answering it: (conversation id, run id, events url)."""
    created = await http.post("/api/conversations", json={"title": "e2e"})
    assert created.status_code == 201, created.text
    cid = created.json()["id"]
    started = await http.post(f"/api/conversations/{cid}/messages", json={"content": "Go on."})
    assert started.status_code == 202, started.text
    return cid, started.json()["run_id"], started.json()["events_url"]


async def read_events(
    http: httpx.AsyncClient, url: str, *, after: int = 0, limit: int | None = None
) -> list[Frame]:
    """Read like an EventSource: from `after` (Last-Event-ID), at most `limit` events."""
    headers = {"Last-Event-ID": str(after)} if after else {}
    frames: list[Frame] = []
    async with aconnect_sse(http, "GET", url, headers=headers) as source:
        assert source.response.status_code == 200
        async for sse in source.aiter_sse():
            frames.append(Frame(int(sse.id), sse.event, json.loads(sse.data)))
            if limit is not None and len(frames) >= limit:
                break  # drop the connection deliberately, mid-run
    return frames


def text_of(frames: list[Frame]) -> str:
    return "".join(f.data["delta"] for f in frames if f.event == "text_delta")


def assert_gap_free(frames: list[Frame]) -> None:
    assert [f.id for f in frames] == list(range(1, len(frames) + 1))


async def conversation(http: httpx.AsyncClient, cid: str) -> dict[str, Any]:
    response = await http.get(f"/api/conversations/{cid}")
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def assistant_of(detail: dict[str, Any]) -> dict[str, Any]:
    [message] = [m for m in detail["messages"] if m["role"] == "assistant"]
    assert isinstance(message, dict)
    return message


@pytest.fixture
async def paced(
    launch: Launch, openai_upstream: FakeOpenAIUpstream
) -> AsyncIterator[tuple[Service, httpx.AsyncClient]]:
    """A service whose model streams slowly (a few seconds per answer)."""
    openai_upstream.enqueue(Completion(text=LONG, delay=0.02))
    service = launch(**openai_backed(openai_upstream.base_url))
    async with httpx.AsyncClient(base_url=service.base_url, timeout=10) as http:
        yield service, http


async def test_an_eventsource_client_that_reconnects_misses_nothing(
    paced: tuple[Service, httpx.AsyncClient],
) -> None:
    _, http = paced
    _, _, url = await start_run(http)
    seen: list[Frame] = []
    connections = 0

    while not seen or seen[-1].event != "run_end":
        connections += 1
        last = seen[-1].id if seen else 0
        seen += await read_events(http, url, after=last or 0, limit=7)

    assert connections > 3
    assert_gap_free(seen)
    assert seen == await read_events(http, url)
    assert text_of(seen) == LONG


async def test_a_run_stopped_by_sigterm_ends_interrupted_after_the_restart(
    launch: Launch,
    paced: tuple[Service, httpx.AsyncClient],
) -> None:
    service, http = paced
    cid, _, url = await start_run(http)
    before = await read_events(http, url, limit=12)

    # uvicorn re-raises the signal after a graceful shutdown: -SIGTERM is a clean stop.
    assert service.stop() in (0, -signal.SIGTERM)
    assert "Application shutdown complete" in service.logs()
    restarted = launch(db=service.db)

    async with httpx.AsyncClient(base_url=restarted.base_url, timeout=10) as again:
        full = await read_events(again, url)
        rest = await read_events(again, url, after=len(before))
        detail = await conversation(again, cid)
    assert_gap_free(full)
    assert full[: len(before)] == before
    assert before + rest == full
    assert full[-1].event == "run_end"
    assert full[-1].data["status"] == "interrupted"
    assert detail["active_run_id"] is None
    answer = assistant_of(detail)
    assert answer["metadata"]["status"] == "incomplete"
    assert answer["content"][0]["data"]["text"] == text_of(full)
    assert text_of(before) in text_of(full)


def stored_events(service: Service, run_id: str) -> int:
    """How many events are stored: the last stored seq (a row holds a batch of them)."""
    with sqlite3.connect(service.db) as conn:
        row = conn.execute(
            "SELECT coalesce(max(seq), 0) FROM run_events WHERE run_id = ?", (run_id,)
        ).fetchone()
    return int(row[0])


async def test_a_run_killed_with_sigkill_is_closed_as_interrupted_at_the_next_start(
    launch: Launch,
    paced: tuple[Service, httpx.AsyncClient],
) -> None:
    service, http = paced
    cid, run_id, url = await start_run(http)
    deadline = time.monotonic() + 10
    while stored_events(service, run_id) < 5:  # a batch of events reached the database
        assert time.monotonic() < deadline, "no events were persisted"
        time.sleep(0.05)

    service.kill()
    # The killed process's leases lapse after RUN_LEASE_SECONDS; the new one closes its run.
    restarted = launch(db=service.db, RUN_LEASE_SECONDS="1")

    async with httpx.AsyncClient(base_url=restarted.base_url, timeout=10) as again:
        full = await read_events(again, url)
        detail = await conversation(again, cid)
    # What the dead process stored is gap-free; the closing events recovery adds come after
    # a jump, so a reader who saw unstored live events still gets them (see RunJournal).
    stored, closing = full[:-2], full[-2:]
    assert_gap_free(stored)
    assert [f.event for f in closing] == ["message_end", "run_end"]
    assert closing[0].id is not None and closing[0].id > (stored[-1].id or 0) + 1000
    assert full[0].event == "run_start"
    assert full[-1].event == "run_end"
    assert full[-1].data["status"] == "interrupted"
    assert detail["active_run_id"] is None
    answer = assistant_of(detail)
    assert answer["metadata"]["status"] == "incomplete"
    assert answer["content"][0]["data"]["text"] == text_of(full)
    assert text_of(full).startswith("token0")


async def test_a_reader_connected_through_sigterm_resumes_on_the_new_process(
    launch: Launch,
    paced: tuple[Service, httpx.AsyncClient],
) -> None:
    service, http = paced
    _, _, url = await start_run(http)
    seen: list[Frame] = []
    ten = asyncio.Event()

    async def follow() -> None:
        try:
            async with aconnect_sse(http, "GET", url) as source:
                async for sse in source.aiter_sse():
                    seen.append(Frame(int(sse.id), sse.event, json.loads(sse.data)))
                    if len(seen) == 10:
                        ten.set()
        except httpx.TransportError:
            pass  # the old process went away mid-stream; the browser would reconnect

    reader = asyncio.create_task(follow())
    await asyncio.wait_for(ten.wait(), timeout=10)
    await asyncio.to_thread(service.stop)
    await asyncio.wait_for(reader, timeout=10)
    restarted = launch(db=service.db)

    async with httpx.AsyncClient(base_url=restarted.base_url, timeout=10) as again:
        full = await read_events(again, url)
        after_last = await again.get(url, headers={"Last-Event-ID": str(seen[-1].id)})
    # The graceful stop checkpointed the run and gave the connected reader its end before
    # the old process went away; the new process has exactly what the reader saw.
    assert seen == full
    assert_gap_free(full)
    assert full[-1].event == "run_end"
    assert full[-1].data["status"] == "interrupted"
    assert after_last.status_code == 204
