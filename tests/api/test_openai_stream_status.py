"""A streamed `/v1/chat/completions` request that fails before any output is answered with its
HTTP status, as OpenAI answers it: the official openai SDK raises its typed error from
`create()` (and would retry by status and `Retry-After`), over real HTTP on loopback.

A model slow to say anything still gets its stream started after one heartbeat interval;
a failure after that arrives inside the stream, as before."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path

import httpx2
import openai
import pytest
from openai import AsyncOpenAI
from openai.types.chat import ChatCompletionMessageParam

from app.settings import Settings
from tests.fakes.db import MakeApi
from tests.fakes.openai_upstream import (
    Completion,
    FakeOpenAIUpstream,
    rate_limited,
    server_error,
)
from tests.support.loopback import served

HI: list[ChatCompletionMessageParam] = [{"role": "user", "content": "Hi"}]


def _settings(tmp_path: Path, upstream: FakeOpenAIUpstream, heartbeat: float) -> Settings:
    return Settings(
        _env_file=None,
        database_url=f"sqlite+aiosqlite:///{tmp_path / 'status.db'}",
        environment="test",
        log_json=False,
        openai_api_key="sk-test-not-real",
        openai_base_url=upstream.base_url,
        provider_max_retries=0,
        heartbeat_seconds=heartbeat,
    )


Serve = Callable[[float], AbstractAsyncContextManager[str]]


@pytest.fixture
def serve(make_api: MakeApi, tmp_path: Path, openai_upstream: FakeOpenAIUpstream) -> Serve:
    """The app on loopback with the given heartbeat interval: its base URL."""

    @asynccontextmanager
    async def start(heartbeat: float) -> AsyncIterator[str]:
        settings = _settings(tmp_path, openai_upstream, heartbeat)
        async with make_api(settings) as api, served(api.app) as url:
            yield url

    return start


def _sdk(url: str) -> AsyncOpenAI:
    return AsyncOpenAI(base_url=f"{url}/v1", api_key="sk-not-used", max_retries=0)


@pytest.fixture
async def sdk(serve: Serve) -> AsyncIterator[AsyncOpenAI]:
    async with serve(15.0) as url, _sdk(url) as client:
        yield client


async def test_a_rate_limited_upstream_is_a_429_a_streaming_sdk_raises_from_create(
    sdk: AsyncOpenAI, openai_upstream: FakeOpenAIUpstream
) -> None:
    openai_upstream.enqueue(rate_limited(retry_after=7))

    with pytest.raises(openai.RateLimitError) as caught:
        await sdk.chat.completions.create(model="gpt-4o-mini", messages=HI, stream=True)

    assert caught.value.status_code == 429
    assert caught.value.response.headers["retry-after"] == "7"
    assert caught.value.response.headers["content-type"].startswith("application/json")
    assert caught.value.code == "provider_rate_limited"


async def test_the_responses_stream_keeps_its_failure_in_band_for_aikit(
    sdk: AsyncOpenAI, openai_upstream: FakeOpenAIUpstream
) -> None:
    # AIKit's stream adapter shows a failed fetch's status text ("Too Many Requests") but a
    # stream's `error` event's message: /v1/responses keeps the failure inside its stream.
    openai_upstream.enqueue(rate_limited(retry_after=7))
    stream = await sdk.responses.create(model="gpt-4o-mini", input="Hi", stream=True)

    with pytest.raises(openai.APIError, match="rate limiting") as caught:
        async for _ in stream:
            pass

    assert not isinstance(caught.value, openai.APIStatusError)


async def test_an_upstream_server_error_is_a_5xx_status_not_a_200_stream(
    sdk: AsyncOpenAI, openai_upstream: FakeOpenAIUpstream
) -> None:
    openai_upstream.enqueue(server_error())

    with pytest.raises(openai.InternalServerError) as caught:
        await sdk.chat.completions.create(model="gpt-4o-mini", messages=HI, stream=True)

    assert caught.value.status_code == 502
    assert "sk-test-not-real" not in caught.value.response.text


async def test_a_healthy_stream_is_unchanged(
    sdk: AsyncOpenAI, openai_upstream: FakeOpenAIUpstream
) -> None:
    openai_upstream.enqueue(Completion(text="All good here."))

    stream = await sdk.chat.completions.create(model="gpt-4o-mini", messages=HI, stream=True)
    text = "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])

    assert text == "All good here."


async def test_a_model_slow_to_say_anything_gets_its_stream_started_within_a_heartbeat(
    serve: Serve, openai_upstream: FakeOpenAIUpstream
) -> None:
    # The upstream sends its first piece of text a second after its first frame; the
    # stream's head waits one heartbeat interval (0.2 s) at most, so heartbeats come first.
    openai_upstream.enqueue(Completion(text=["Slow", " answer."], delay=1.0))
    body = {"model": "gpt-4o-mini", "messages": HI, "stream": True}

    async with (
        serve(0.2) as url,
        httpx2.AsyncClient(base_url=url, timeout=10) as http,
        http.stream("POST", "/v1/chat/completions", json=body) as response,
    ):
        assert response.status_code == 200
        lines = [line async for line in response.aiter_lines() if line]

    first_text = next(i for i, line in enumerate(lines) if '"content":"Slow"' in line)
    assert any(line.startswith(":") for line in lines[:first_text]), lines[:3]
    assert lines[-1] == "data: [DONE]"


async def test_a_failure_after_the_heartbeat_interval_arrives_inside_the_stream(
    serve: Serve, openai_upstream: FakeOpenAIUpstream
) -> None:
    openai_upstream.enqueue(dataclasses.replace(rate_limited(retry_after=7), delay=1.0))
    async with serve(0.2) as url, _sdk(url) as sdk:
        stream = await sdk.chat.completions.create(model="gpt-4o-mini", messages=HI, stream=True)

        with pytest.raises(openai.APIError) as caught:
            async for _ in stream:
                pass

    assert not isinstance(caught.value, openai.APIStatusError)
    assert caught.value.body == {
        "message": caught.value.message,
        "type": "rate_limit_exceeded",
        "code": "provider_rate_limited",
    }
