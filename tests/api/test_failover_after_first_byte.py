"""Failover after the first byte, through the real openai and anthropic SDK paths: a stream
that fails mid-answer is answered again by its fallback only where the deployment (or the
model's catalogue entry) allows it and the reader can take text back; the client is told
(`step_reset`), the stored message holds only the replacement and says which model
answered, and both attempts are booked under their own models."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from datetime import UTC, datetime
from typing import Any

import openai
import pytest

from app.settings import Settings
from tests.api.sse_frames import Frame, parse
from tests.api.test_openai_compat import sdk_for
from tests.fakes.anthropic_upstream import AnthropicUpstream
from tests.fakes.db import ApiClient, MakeApi
from tests.fakes.failover import WHOLE, catalogue, cut_then_replaced
from tests.fakes.openai_upstream import FakeOpenAIUpstream

ASK = {"messages": [{"role": "user", "content": "Hi"}], "stream": True}
Deploy = Callable[..., AbstractAsyncContextManager[ApiClient]]


@pytest.fixture
def deploy(
    make_api: MakeApi,
    failover_settings: Settings,
    openai_upstream: FakeOpenAIUpstream,
    anthropic_upstream: AnthropicUpstream,
) -> Deploy:
    """Starts the deployment with `update` applied; its primary's answer will be cut."""
    cut_then_replaced(openai_upstream, anthropic_upstream)

    def start(**update: Any) -> AbstractAsyncContextManager[ApiClient]:
        return make_api(failover_settings.model_copy(update=update))

    return start


@pytest.fixture
async def allowed(deploy: Deploy) -> AsyncIterator[ApiClient]:
    """A deployment that allows failover after the first byte."""
    async with deploy(failover_after_first_byte=True) as api:
        yield api


async def conversation_turn(api: ApiClient) -> tuple[str, list[Frame]]:
    cid = (await api.post("/api/conversations", json={})).json()["id"]
    started = await api.post(f"/api/conversations/{cid}/messages", json={"content": "Hi"})
    assert started.status_code == 202, started.text
    return cid, parse((await api.get(started.json()["events_url"])).text)


def text_of(frames: list[Frame]) -> str:
    return "".join(f.data["delta"] for f in frames if f.event == "text_delta")


async def test_a_cut_stream_is_reset_and_replaced_and_only_the_replacement_is_stored(
    allowed: ApiClient, anthropic_upstream: AnthropicUpstream
) -> None:

    cid, frames = await conversation_turn(allowed)

    [at] = [n for n, f in enumerate(frames) if f.event == "step_reset"]
    reset = frames[at]
    assert text_of(frames[:at])  # the client had seen the start of the failed answer
    assert reset.data["model"] == "claude-backup"
    assert reset.data["failed_model"] == "gpt-main"
    assert reset.data["code"] == "provider_unavailable"
    assert reset.data["message"]["content"] == []  # nothing before this call to keep
    assert text_of(frames[at:]) == WHOLE
    end = frames[-1].data
    assert end["status"] == "completed"
    assert end["usage"]["model_calls"] == 2
    stored = (await allowed.get(f"/api/conversations/{cid}")).json()["messages"][-1]
    assert [p["data"]["text"] for p in stored["content"]] == [WHOLE]
    assert stored["metadata"]["model"] == "claude-backup"
    assert stored["metadata"]["fallback_from"] == "gpt-main"
    assert stored["metadata"]["replaced_attempts"] == [
        {"model": "gpt-main", "error": "provider_unavailable"}
    ]


async def test_both_attempts_are_booked_under_the_model_that_made_them(
    allowed: ApiClient, anthropic_upstream: AnthropicUpstream
) -> None:

    await conversation_turn(allowed)

    today = datetime.now(UTC).date().isoformat()
    report = (await allowed.get(f"/api/usage?from={today}&to={today}")).json()
    calls = {day["model"]: day for day in report["days"]}
    assert calls["gpt-main"]["calls"] == 1 and calls["gpt-main"]["estimated_calls"] == 1
    assert calls["claude-backup"]["calls"] == 1
    assert calls["gpt-main"]["output_tokens"] > 0  # what streamed before the cut was billed


async def test_without_the_setting_a_cut_stream_fails_and_the_fallback_is_never_called(
    deploy: Deploy, anthropic_upstream: AnthropicUpstream
) -> None:
    async with deploy() as api:
        cid, frames = await conversation_turn(api)
        stored = (await api.get(f"/api/conversations/{cid}")).json()["messages"][-1]

    assert "step_reset" not in [f.event for f in frames]
    assert frames[-1].data["status"] == "failed"
    assert anthropic_upstream.requests == []
    assert stored["metadata"]["model"] == "gpt-main"
    assert "replaced_attempts" not in stored["metadata"]


async def test_a_catalogue_entry_allows_it_where_the_deployment_does_not(
    deploy: Deploy, anthropic_upstream: AnthropicUpstream
) -> None:
    async with deploy(models_json=catalogue(failover_after_first_byte=True)) as api:
        frames = parse((await api.post("/api/chat", json=ASK)).text)

    assert [f.data["model"] for f in frames if f.event == "step_reset"] == ["claude-backup"]
    [end] = [f for f in frames if f.event == "message_end"]
    assert [p["data"]["text"] for p in end.data["message"]["content"]] == [WHOLE]


async def test_a_catalogue_entry_can_refuse_it_where_the_deployment_allows_it(
    deploy: Deploy, anthropic_upstream: AnthropicUpstream
) -> None:
    refused = catalogue(failover_after_first_byte=False)
    async with deploy(models_json=refused, failover_after_first_byte=True) as api:
        frames = parse((await api.post("/api/chat", json=ASK)).text)

    assert frames[-1].data["status"] == "failed"
    assert anthropic_upstream.requests == []


async def test_a_non_streamed_chat_completion_answers_with_the_replacement_alone(
    allowed: ApiClient, anthropic_upstream: AnthropicUpstream
) -> None:
    client = sdk_for(allowed)

    completion = await client.chat.completions.create(
        model="gpt-main", messages=[{"role": "user", "content": "Hi"}]
    )
    await client.close()

    assert completion.choices[0].message.content == WHOLE
    assert len(anthropic_upstream.requests) == 1


async def test_a_streamed_chat_completion_cannot_take_text_back_so_it_fails_as_before(
    allowed: ApiClient, anthropic_upstream: AnthropicUpstream
) -> None:
    client = sdk_for(allowed)

    async def read() -> None:
        chunks = await client.chat.completions.create(
            model="gpt-main", messages=[{"role": "user", "content": "Hi"}], stream=True
        )
        async for _ in chunks:
            pass

    with pytest.raises(openai.APIError):  # the stream breaks off as the upstream's did
        await read()
    await client.close()

    assert anthropic_upstream.requests == []
