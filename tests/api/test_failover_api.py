"""A model whose provider fails before the first byte is answered by its fallback, through
the real openai and anthropic SDKs, and the answer says which model gave it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from app.settings import Settings
from tests.api.sse_frames import parse
from tests.fakes.anthropic_upstream import AnthropicUpstream, MessageSpec, Text
from tests.fakes.db import ApiClient, MakeApi
from tests.fakes.failover import behind_fakes, catalogue
from tests.fakes.openai_upstream import Completion, FakeOpenAIUpstream, server_error


@pytest.fixture
async def api(make_api: MakeApi, failover_settings: Settings) -> AsyncIterator[ApiClient]:
    async with make_api(failover_settings) as client:
        yield client


async def test_a_failing_primary_is_answered_by_its_fallback_and_the_message_says_so(
    api: ApiClient, openai_upstream: FakeOpenAIUpstream, anthropic_upstream: AnthropicUpstream
) -> None:
    openai_upstream.enqueue(server_error())
    anthropic_upstream.message(MessageSpec(blocks=[Text("Claude stepped in.")]))

    response = await api.post("/api/chat", json={"messages": [{"role": "user", "content": "Hi"}]})

    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    assert body["choices"][0]["message"]["content"] == "Claude stepped in."
    assert body["message"]["metadata"]["model"] == "claude-backup"
    assert body["message"]["metadata"]["fallback_from"] == "gpt-main"
    assert len(openai_upstream.request_bodies()) == 1
    assert anthropic_upstream.requests[0].json["model"] == "claude-haiku-4-5"


async def test_a_conversation_stores_which_model_answered(
    api: ApiClient, openai_upstream: FakeOpenAIUpstream, anthropic_upstream: AnthropicUpstream
) -> None:
    openai_upstream.enqueue(server_error())
    anthropic_upstream.message(MessageSpec(blocks=[Text("From the backup.")]))
    cid = (await api.post("/api/conversations", json={})).json()["id"]

    started = await api.post(f"/api/conversations/{cid}/messages", json={"content": "Hi"})
    frames = parse((await api.get(started.json()["events_url"])).text)

    assert frames[-1].data["status"] == "completed"
    detail = (await api.get(f"/api/conversations/{cid}")).json()
    answer = detail["messages"][-1]
    assert answer["metadata"]["model"] == "claude-backup"
    assert answer["metadata"]["fallback_from"] == "gpt-main"


async def test_a_healthy_primary_answers_alone(
    api: ApiClient, openai_upstream: FakeOpenAIUpstream, anthropic_upstream: AnthropicUpstream
) -> None:
    openai_upstream.enqueue(Completion(text="GPT here."))

    body = (
        await api.post("/api/chat", json={"messages": [{"role": "user", "content": "Hi"}]})
    ).json()

    assert body["choices"][0]["message"]["content"] == "GPT here."
    assert body["message"]["metadata"]["model"] == "gpt-main"
    assert "fallback_from" not in body["message"]["metadata"]
    assert anthropic_upstream.requests == []


async def test_a_fallback_is_asked_for_no_more_output_than_its_own_cap(
    make_api: MakeApi,
    app_settings: Settings,
    openai_upstream: FakeOpenAIUpstream,
    anthropic_upstream: AnthropicUpstream,
) -> None:
    # The primary may write 16000 tokens, the backup 4096 (the default): the ask the
    # primary took went to the backup unchanged, past what the backup may write.
    settings = behind_fakes(
        app_settings,
        openai_upstream,
        anthropic_upstream,
        models_json=catalogue(max_output_tokens=16_000),
    )
    openai_upstream.enqueue(server_error())
    anthropic_upstream.message(MessageSpec(blocks=[Text("Claude stepped in.")]))
    ask = {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 10_000}

    async with make_api(settings) as api:
        response = await api.post("/api/chat", json=ask)

    assert response.status_code == 200, response.text
    assert openai_upstream.request_bodies()[0]["max_tokens"] == 10_000
    assert anthropic_upstream.requests[0].json["max_tokens"] == 4096
