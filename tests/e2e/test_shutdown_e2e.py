"""SIGTERM through a real uvicorn process: every live stream gets a final event and a
clean end, new requests are told 503 shutting_down, and the whole drain is bounded."""

from __future__ import annotations

import asyncio
import json
import signal
import socket
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from httpx_sse import aconnect_sse

from tests.e2e.conftest import Launch, Service, openai_backed
from tests.fakes.openai_upstream import Completion, FakeOpenAIUpstream

pytestmark = pytest.mark.e2e

LONG = " ".join(f"token{i}" for i in range(400))  # about 8 s at 20 ms a chunk


@pytest.fixture
async def paced(
    launch: Launch, openai_upstream: FakeOpenAIUpstream
) -> AsyncIterator[tuple[Service, httpx.AsyncClient]]:
    for _ in range(3):
        openai_upstream.enqueue(Completion(text=LONG, delay=0.02))
    service = launch(**openai_backed(openai_upstream.base_url))
    async with httpx.AsyncClient(base_url=service.base_url, timeout=20) as http:
        yield service, http


async def _native(
    http: httpx.AsyncClient, method: str, url: str, **kw: Any
) -> list[dict[str, Any]]:
    """Every event of a native SSE stream, read until the server ends the body."""
    seen: list[dict[str, Any]] = []
    async with aconnect_sse(http, method, url, **kw) as source:
        async for sse in source.aiter_sse():
            seen.append({"event": sse.event, "id": sse.id, **json.loads(sse.data)})
    return seen


async def _chat_chunks(http: httpx.AsyncClient) -> list[str]:
    """The raw `data:` payloads of a /v1/chat/completions stream, to its end."""
    payloads: list[str] = []
    body = {"model": "gpt-4o-mini", "stream": True, "messages": [{"role": "user", "content": "Go"}]}
    async with http.stream("POST", "/v1/chat/completions", json=body) as response:
        assert response.status_code == 200
        async for line in response.aiter_lines():
            if line.startswith("data: "):
                payloads.append(line.removeprefix("data: "))
    return payloads


async def test_sigterm_ends_every_live_stream_with_a_final_event_and_a_clean_end(
    paced: tuple[Service, httpx.AsyncClient],
) -> None:
    service, http = paced
    created = await http.post("/api/conversations", json={})
    cid = created.json()["id"]
    started = await http.post(f"/api/conversations/{cid}/messages", json={"content": "Go"})
    follow = asyncio.create_task(_native(http, "GET", started.json()["events_url"]))
    stateless = asyncio.create_task(
        _native(
            http,
            "POST",
            "/api/chat",
            json={"stream": True, "messages": [{"role": "user", "content": "Go"}]},
        )
    )
    chunks = asyncio.create_task(_chat_chunks(http))
    await asyncio.sleep(1.0)  # every stream is well under way

    exit_code = await asyncio.to_thread(service.stop)

    # Each body ended cleanly (no transport error raised) with a last word.
    followed, direct, openai_chunks = await asyncio.gather(follow, stateless, chunks)
    for events in (followed, direct):
        assert events[-1]["event"] == "run_end"
        assert events[-1]["status"] == "interrupted"
        assert [e["code"] for e in events if e["event"] == "error"] == ["shutting_down"]
        assert events[-2]["event"] == "message_end"
    assert openai_chunks[-1] == "[DONE]"
    assert any("shutting_down" in p for p in openai_chunks)
    assert exit_code in (0, -signal.SIGTERM)
    assert "Application shutdown complete" in service.logs()


async def test_new_requests_during_the_drain_are_told_503_shutting_down(
    paced: tuple[Service, httpx.AsyncClient],
) -> None:
    service, _ = paced
    assert service.proc is not None

    service.proc.send_signal(signal.SIGTERM)
    await asyncio.sleep(0.2)
    async with httpx.AsyncClient(base_url=service.base_url, timeout=5) as fresh:
        refused = await fresh.get("/api/models")

    assert refused.status_code == 503
    assert refused.json()["error"]["code"] == "shutting_down"
    assert refused.headers["retry-after"]
    assert "x-request-id" in refused.headers
    assert await asyncio.to_thread(service.stop) in (0, -signal.SIGTERM)


async def test_a_stalled_reader_cannot_hold_the_shutdown_past_its_budget(
    launch: Launch, openai_upstream: FakeOpenAIUpstream
) -> None:
    openai_upstream.enqueue(Completion(text=LONG * 20, delay=0.0))
    service = launch(**openai_backed(openai_upstream.base_url), SHUTDOWN_TIMEOUT_SECONDS="2")
    async with httpx.AsyncClient(base_url=service.base_url, timeout=20) as http:
        created = await http.post("/api/conversations", json={})
        cid = created.json()["id"]
        started = await http.post(f"/api/conversations/{cid}/messages", json={"content": "Go"})
        url = started.json()["events_url"]
    # A reader that asks for the events and then never reads a byte.
    stalled = socket.create_connection(("127.0.0.1", service.port))
    stalled.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    stalled.sendall(f"GET {url} HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n".encode())
    await asyncio.sleep(1.0)

    began = time.monotonic()
    exit_code = await asyncio.to_thread(service.stop)
    took = time.monotonic() - began
    stalled.close()

    assert exit_code in (0, -signal.SIGTERM)
    # The drain budget (2 s) plus uvicorn's own graceful timeout (5 s in these tests).
    assert took < 2 + 5 + 2
