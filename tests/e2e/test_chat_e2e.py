"""End to end through a real uvicorn process, OpenAI behind it (the fake upstream):
/api/chat streaming and not, /v1/chat/completions through the official openai SDK, and a
client that hangs up closing the upstream call."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import httpx
import openai
import pytest
from openai import AsyncOpenAI
from openai.types.chat import ChatCompletionMessageParam

from tests.api.sse_frames import parse
from tests.e2e.conftest import Launch, Service, openai_backed
from tests.fakes.anthropic_upstream import AnthropicUpstream, MessageSpec, Text
from tests.fakes.openai_upstream import Completion, FakeOpenAIUpstream, ToolCall

pytestmark = pytest.mark.e2e

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather for a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}
LONG = " ".join(f"token{i}" for i in range(200))


@pytest.fixture(scope="module")
def service(module_launch: Launch, module_upstream: FakeOpenAIUpstream) -> Service:
    return module_launch(**openai_backed(module_upstream.base_url))


@pytest.fixture
def openai_upstream(module_upstream: FakeOpenAIUpstream) -> FakeOpenAIUpstream:
    """The module's upstream (one process serves every test here)."""
    return module_upstream


@pytest.fixture
async def http(service: Service) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=service.base_url, timeout=10) as client:
        yield client


@pytest.fixture
async def sdk(service: Service) -> AsyncIterator[AsyncOpenAI]:
    client = AsyncOpenAI(base_url=f"{service.base_url}/v1", api_key="sk-client", max_retries=0)
    yield client
    await client.close()


def ask(text: str = "Hi") -> list[ChatCompletionMessageParam]:
    return [{"role": "user", "content": text}]


async def test_api_chat_answers_whole(
    http: httpx.AsyncClient, openai_upstream: FakeOpenAIUpstream
) -> None:
    openai_upstream.enqueue(Completion(text="Hello from upstream."))

    response = await http.post("/api/chat", json={"messages": ask()})

    assert response.status_code == 200, response.text
    body = response.json()
    assert body["choices"][0]["message"]["content"] == "Hello from upstream."
    assert body["message"]["content"][0]["data"]["text"] == "Hello from upstream."
    assert openai_upstream.request_bodies()[-1]["model"] == "gpt-4o-mini"


async def test_api_chat_streams_native_sse(
    http: httpx.AsyncClient, openai_upstream: FakeOpenAIUpstream
) -> None:
    openai_upstream.enqueue(Completion(text="Streamed over a real socket."))

    async with http.stream("POST", "/api/chat", json={"messages": ask(), "stream": True}) as r:
        assert r.status_code == 200
        assert r.headers["x-accel-buffering"] == "no"
        body = (await r.aread()).decode()

    frames = parse(body)
    assert [f.id for f in frames] == list(range(1, len(frames) + 1))
    assert (frames[0].event, frames[-1].event) == ("run_start", "run_end")
    text = "".join(f.data["delta"] for f in frames if f.event == "text_delta")
    assert text == "Streamed over a real socket."


async def test_openai_sdk_non_stream(sdk: AsyncOpenAI, openai_upstream: FakeOpenAIUpstream) -> None:
    openai_upstream.enqueue(Completion(text="Plain answer."))

    completion = await sdk.chat.completions.create(model="gpt-4o-mini", messages=ask())

    assert completion.choices[0].message.content == "Plain answer."
    assert completion.model == "gpt-4o-mini"


async def test_openai_sdk_stream_with_usage(
    sdk: AsyncOpenAI, openai_upstream: FakeOpenAIUpstream
) -> None:
    openai_upstream.enqueue(Completion(text="Chunked answer here.", usage=(11, 7)))

    stream = await sdk.chat.completions.create(
        model="gpt-4o-mini",
        messages=ask(),
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = [c async for c in stream]

    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == (
        "Chunked answer here."
    )
    assert chunks[-1].usage is not None
    assert (chunks[-1].usage.prompt_tokens, chunks[-1].usage.completion_tokens) == (11, 7)


async def test_openai_sdk_parallel_client_tool_calls(
    sdk: AsyncOpenAI, openai_upstream: FakeOpenAIUpstream
) -> None:
    openai_upstream.enqueue(
        Completion(
            tool_calls=[
                ToolCall("get_weather", {"city": "Oslo"}, id="call_a"),
                ToolCall("get_weather", {"city": "Rome"}, id="call_b"),
            ],
            interleave=True,
        )
    )

    completion = await sdk.chat.completions.create(
        model="gpt-4o-mini",
        messages=ask("Oslo and Rome?"),
        tools=[WEATHER],  # type: ignore[list-item]
    )

    choice = completion.choices[0]
    assert choice.finish_reason == "tool_calls"
    calls = [(c.id, json.loads(c.function.arguments)) for c in choice.message.tool_calls or []]  # type: ignore[union-attr]
    assert calls == [("call_a", {"city": "Oslo"}), ("call_b", {"city": "Rome"})]


async def test_openai_sdk_sees_errors_as_its_own_exceptions(sdk: AsyncOpenAI) -> None:
    with pytest.raises(openai.NotFoundError):
        await sdk.chat.completions.create(model="no-such-model", messages=ask())
    with pytest.raises(openai.BadRequestError):
        await sdk.chat.completions.create(model="gpt-4o-mini", messages=[])


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/api/chat", {"messages": ask(), "stream": True}),
        ("/v1/chat/completions", {"model": "gpt-4o-mini", "messages": ask(), "stream": True}),
    ],
    ids=["api-chat", "v1-chat-completions"],
)
async def test_a_client_hanging_up_closes_the_upstream_call(
    http: httpx.AsyncClient,
    openai_upstream: FakeOpenAIUpstream,
    path: str,
    body: dict[str, object],
) -> None:
    openai_upstream.enqueue(Completion(text=LONG, delay=0.05))

    async with http.stream("POST", path, json=body) as response:
        async for line in response.aiter_lines():
            if "token1" in line:  # some text arrived: the upstream stream is open
                break

    log = openai_upstream.wait_for_stream_end(timeout=1.0)
    assert log.outcome == "client_disconnected"
    assert log.closed_at is not None


async def test_openai_sdk_works_with_an_anthropic_model_behind(
    launch: Launch, anthropic_upstream: AnthropicUpstream
) -> None:
    catalogue = [{"id": "claude-test", "provider": "anthropic", "upstream_model": "claude-x"}]
    service = launch(
        MODELS_JSON=json.dumps(catalogue),
        ANTHROPIC_API_KEY="sk-ant-e2e-not-real",
        ANTHROPIC_BASE_URL=anthropic_upstream.base_url,
        PROVIDER_MAX_RETRIES="0",
    )
    anthropic_upstream.message(MessageSpec([Text("Hello from Claude.")]))
    anthropic_upstream.message(MessageSpec([Text("Streamed Claude.")]))
    client = AsyncOpenAI(base_url=f"{service.base_url}/v1", api_key="sk-client", max_retries=0)

    async with client:
        whole = await client.chat.completions.create(model="claude-test", messages=ask())
        stream = await client.chat.completions.create(
            model="claude-test",
            messages=ask(),
            stream=True,
            stream_options={"include_usage": True},
        )
        chunks = [c async for c in stream]

    assert whole.choices[0].message.content == "Hello from Claude."
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == (
        "Streamed Claude."
    )
    assert chunks[-1].usage is not None
    anthropic_upstream.assert_all_used()


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/api/chat", {"messages": ask()}),
        ("/v1/chat/completions", {"model": "gpt-4o-mini", "messages": ask()}),
    ],
    ids=["api-chat", "v1-chat-completions"],
)
async def test_a_client_abandoning_a_non_streamed_answer_closes_the_upstream_call(
    service: Service, openai_upstream: FakeOpenAIUpstream, path: str, body: dict[str, object]
) -> None:
    openai_upstream.enqueue(Completion(text=LONG, delay=0.05))  # ten seconds of answer
    opened = len(openai_upstream.streams)
    impatient = httpx.Timeout(10, read=0.5)

    async with httpx.AsyncClient(base_url=service.base_url, timeout=impatient) as http:
        with pytest.raises(httpx.ReadTimeout):
            await http.post(path, json=body)

    assert len(openai_upstream.streams) == opened + 1
    log = openai_upstream.wait_for_stream_end(timeout=1.0)
    assert log.outcome == "client_disconnected"


async def test_a_stream_asked_to_continue_keeps_the_upstream_call_after_a_hang_up(
    http: httpx.AsyncClient, openai_upstream: FakeOpenAIUpstream
) -> None:
    openai_upstream.enqueue(Completion(text=" ".join(f"token{i}" for i in range(20)), delay=0.05))
    body = {"messages": ask(), "stream": True, "on_disconnect": "continue"}

    async with http.stream("POST", "/api/chat", json=body) as response:
        async for line in response.aiter_lines():
            if "token1" in line:
                break

    log = openai_upstream.wait_for_stream_end(timeout=5.0)
    assert log.outcome == "completed"


async def test_a_provider_key_read_from_a_file_is_sent_without_its_line_break(
    launch: Launch, anthropic_upstream: AnthropicUpstream
) -> None:
    catalogue = [{"id": "claude-test", "provider": "anthropic", "upstream_model": "claude-x"}]
    service = launch(
        ANTHROPIC_API_KEY="gateway-key-0123456789\n",
        ANTHROPIC_BASE_URL=anthropic_upstream.base_url,
        MODELS_JSON=json.dumps(catalogue),
        DEFAULT_MODEL="claude-test",
        PROVIDER_MAX_RETRIES="0",
    )
    anthropic_upstream.message(MessageSpec([Text("Hello from Claude.")]))
    async with httpx.AsyncClient(base_url=service.base_url, timeout=10) as client:
        answer = await client.post("/api/chat", json={"messages": ask()})

    assert answer.status_code == 200, answer.text
    assert answer.json()["choices"][0]["message"]["content"] == "Hello from Claude."
    sent = set(anthropic_upstream.requests[0].headers.values())
    assert sent & {"gateway-key-0123456789", "Bearer gateway-key-0123456789"}
