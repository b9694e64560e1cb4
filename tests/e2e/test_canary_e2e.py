"""Canary keys: a real process runs with `sk-canary-...` provider keys, a canary JWT secret
and DEBUG logging; upstreams fail in every way they do (401 echoing the key, 429, 500, a
cut stream, an Anthropic stream error) while every surface is driven. The canaries must
appear in no log line, response body or header, SSE frame, database row or metric."""

from __future__ import annotations

import asyncio
import json
import secrets
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import jwt
import pytest

from tests.e2e.conftest import Launch, Service
from tests.fakes.anthropic_upstream import AnthropicUpstream, MessageSpec, Text
from tests.fakes.openai_upstream import (
    Completion,
    FakeOpenAIUpstream,
    error_reply,
    rate_limited,
    server_error,
    unauthorized,
)

pytestmark = pytest.mark.e2e

OPENAI_KEY = f"sk-canary-{secrets.token_hex(16)}"
ANTHROPIC_KEY = f"sk-ant-canary-{secrets.token_hex(16)}"
JWT_SECRET = f"jwt-canary-{secrets.token_hex(24)}"
MASKED_ECHO = f"{OPENAI_KEY[:8]}{'*' * (len(OPENAI_KEY) - 12)}{OPENAI_KEY[-4:]}"
CANARIES = {
    "openai key": OPENAI_KEY,
    "openai key body": OPENAI_KEY.removeprefix("sk-canary-"),
    "openai masked echo": MASKED_ECHO,
    "anthropic key": ANTHROPIC_KEY,
    "anthropic key body": ANTHROPIC_KEY.removeprefix("sk-ant-canary-"),
    "jwt secret": JWT_SECRET,
    "jwt secret body": JWT_SECRET.removeprefix("jwt-canary-"),
}
CATALOGUE = json.dumps(
    [
        {"id": "gpt-4o-mini", "provider": "openai", "upstream_model": "gpt-4o-mini"},
        {"id": "claude-test", "provider": "anthropic", "upstream_model": "claude-haiku-4-5"},
    ]
)
ASK = [{"role": "user", "content": "Hello"}]


def leaks(text: str) -> list[str]:
    return [name for name, value in CANARIES.items() if value in text]


@dataclass
class Seen:
    """Everything a client saw, as text: bodies, headers and SSE frames."""

    responses: list[str] = field(default_factory=list)
    statuses: list[int] = field(default_factory=list)

    def add(self, response: httpx.Response, body: str) -> None:
        headers = "\n".join(f"{k}: {v}" for k, v in response.headers.multi_items())
        self.statuses.append(response.status_code)
        self.responses.append(f"{response.status_code}\n{headers}\n\n{body}")


@dataclass
class Exercise:
    service: Service
    seen: Seen
    metrics: str
    logs: str
    openai_requests: list[dict[str, str]]
    anthropic_requests: int


def openai_failures() -> list[Any]:
    """One of each: full echo, masked echo, 429, 500, a stream cut after a few frames."""
    return [
        error_reply(401, f"Incorrect API key provided: {OPENAI_KEY}.", code="invalid_api_key"),
        unauthorized(OPENAI_KEY),
        rate_limited(),
        server_error(),
        Completion(text="partial answer that is cut", cut_after=3),
    ]


def anthropic_failures(upstream: AnthropicUpstream) -> None:
    upstream.error(401, f"invalid x-api-key: {ANTHROPIC_KEY}", error_type="authentication_error")
    upstream.error(429, f"rate limited for key {ANTHROPIC_KEY}", headers={"retry-after": "1"})
    upstream.error(500, f"boom {ANTHROPIC_KEY}")
    upstream.stream_error(MessageSpec([Text("half an answer")]), after=3)


async def drive(http: httpx.AsyncClient, seen: Seen, method: str, url: str, **kw: Any) -> None:
    async with http.stream(method, url, **kw) as response:
        body = (await response.aread()).decode(errors="replace")
    seen.add(response, body)


@pytest.fixture(scope="module")
def canary_anthropic(_anthropic_upstream_server: AnthropicUpstream) -> Iterator[AnthropicUpstream]:
    _anthropic_upstream_server.reset()
    _anthropic_upstream_server.validate = False
    yield _anthropic_upstream_server
    _anthropic_upstream_server.reset()


@pytest.fixture(scope="module")
def exercise(
    module_launch: Launch, module_upstream: FakeOpenAIUpstream, canary_anthropic: AnthropicUpstream
) -> Exercise:
    """Drive every surface once against failing upstreams, then stop the service."""
    return asyncio.run(_exercise(module_launch, module_upstream, canary_anthropic))


async def _exercise(
    module_launch: Launch, module_upstream: FakeOpenAIUpstream, canary_anthropic: AnthropicUpstream
) -> Exercise:
    service = module_launch(
        OPENAI_API_KEY=OPENAI_KEY,
        OPENAI_BASE_URL=module_upstream.base_url,
        ANTHROPIC_API_KEY=ANTHROPIC_KEY,
        ANTHROPIC_BASE_URL=canary_anthropic.base_url,
        JWT_SECRET=JWT_SECRET,
        MODELS_JSON=CATALOGUE,
        DEFAULT_MODEL="gpt-4o-mini",
        PROVIDER_MAX_RETRIES="0",
    )
    token = jwt.encode(
        {"sub": "canary-user", "roles": ["user", "admin"], "exp": int(time.time()) + 600},
        JWT_SECRET,
        algorithm="HS256",
    )
    seen = Seen()
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(base_url=service.base_url, headers=headers, timeout=15) as http:
        # /api/chat, answered whole and streamed
        for stream in (False, True):
            module_upstream.enqueue(*openai_failures())
            for _ in openai_failures():
                await drive(
                    http, seen, "POST", "/api/chat", json={"messages": ASK, "stream": stream}
                )
        # /v1/chat/completions, answered whole and streamed
        for stream in (False, True):
            module_upstream.enqueue(*openai_failures())
            for _ in openai_failures():
                body = {"model": "gpt-4o-mini", "messages": ASK, "stream": stream}
                await drive(http, seen, "POST", "/v1/chat/completions", json=body)
        # Anthropic behind both surfaces
        for stream in (False, True):
            anthropic_failures(canary_anthropic)
            for _ in range(4):
                body = {"model": "claude-test", "messages": ASK, "stream": stream}
                await drive(http, seen, "POST", "/api/chat", json=body)
        # conversation runs: stored events, stored messages, replays
        module_upstream.enqueue(*openai_failures())
        for _ in openai_failures():
            created = await http.post("/api/conversations", json={"title": "canary"})
            seen.add(created, created.text)
            cid = created.json()["id"]
            started = await http.post(f"/api/conversations/{cid}/messages", json={"content": "Hi"})
            seen.add(started, started.text)
            await drive(http, seen, "GET", started.json()["events_url"])
            await drive(http, seen, "GET", f"/api/conversations/{cid}")
        await drive(http, seen, "GET", "/api/conversations")
        await drive(http, seen, "GET", "/api/models")
        metrics = await http.get("/metrics")
        seen.add(metrics, metrics.text)
    service.stop()
    return Exercise(
        service=service,
        seen=seen,
        metrics=metrics.text,
        logs=service.logs(),
        openai_requests=[r.headers for r in module_upstream.requests],
        anthropic_requests=len(canary_anthropic.requests),
    )


def test_the_canary_keys_really_were_used_and_the_upstreams_failed(exercise: Exercise) -> None:
    assert exercise.openai_requests
    assert all(h["authorization"] == f"Bearer {OPENAI_KEY}" for h in exercise.openai_requests)
    assert exercise.anthropic_requests == 8
    assert any(s >= 500 for s in exercise.seen.statuses)
    assert 429 in exercise.seen.statuses


def test_no_log_line_holds_a_canary(exercise: Exercise) -> None:
    assert exercise.logs.count("\n") > 100  # DEBUG logging was on
    bad = [line[:300] for line in exercise.logs.splitlines() if leaks(line)]
    assert bad == []


def test_no_response_header_body_or_sse_frame_holds_a_canary(exercise: Exercise) -> None:
    bad = [(leaks(text), text[:500]) for text in exercise.seen.responses if leaks(text)]
    assert bad == []


def test_no_database_row_holds_a_canary(exercise: Exercise) -> None:
    rows = exercise.service.db_rows()
    assert rows["run_events"]
    bad = [(table, str(row)[:300]) for table, rs in rows.items() for row in rs if leaks(str(row))]
    assert bad == []


def test_no_metric_holds_a_canary(exercise: Exercise) -> None:
    assert "chat_bff" in exercise.metrics or "http" in exercise.metrics
    assert leaks(exercise.metrics) == []
