"""`/v1/chat/completions` driven by the official openai SDK, in process (ASGI)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import httpx2
import openai
import pytest
from openai import AsyncOpenAI

from app.providers.scripted import Script, ScriptedProvider, ScriptedToolCall, ScriptedTurn
from app.settings import Settings
from tests.fakes.anthropic_upstream import AnthropicUpstream, MessageSpec, Text
from tests.fakes.db import ApiClient, MakeApi
from tests.fakes.openai_upstream import (
    Completion,
    FakeOpenAIUpstream,
    unauthorized,
)

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather for a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}


def base_settings(tmp_path: Path, **overrides: object) -> Settings:
    return Settings(
        _env_file=None,
        database_url=f"sqlite+aiosqlite:///{tmp_path / 'compat.db'}",
        environment="test",
        log_json=False,
        scripted_delay_ms=0,
        **overrides,  # type: ignore[arg-type]
    )


def play(api: ApiClient, *turns: ScriptedTurn) -> ScriptedProvider:
    """Script the next model calls: a fresh sequence provider behind the `scripted` model."""
    provider = ScriptedProvider(Script(mode="sequence", turns=list(turns)), delay_ms=0)
    api.services.providers["scripted"] = provider
    return provider


def sdk_for(api: ApiClient) -> AsyncOpenAI:
    http = httpx2.AsyncClient(transport=httpx2.ASGITransport(app=api.app), base_url="http://test")
    return AsyncOpenAI(
        base_url="http://test/v1", api_key="sk-not-used", http_client=http, max_retries=0
    )


@pytest.fixture
async def api(make_api: MakeApi, tmp_path: Path) -> AsyncIterator[ApiClient]:
    idle = ScriptedProvider(Script(mode="sequence", turns=[]))
    async with make_api(base_settings(tmp_path), providers={"scripted": idle}) as client:
        yield client


@pytest.fixture
async def sdk(api: ApiClient) -> AsyncIterator[AsyncOpenAI]:
    client = sdk_for(api)
    yield client
    await client.close()


async def test_a_non_streamed_completion_reads_through_the_sdk(
    api: ApiClient, sdk: AsyncOpenAI
) -> None:
    play(api, ScriptedTurn(text="Hello from the service."))

    completion = await sdk.chat.completions.create(
        model="scripted", messages=[{"role": "user", "content": "Hi"}]
    )

    assert completion.object == "chat.completion"
    assert completion.choices[0].message.content == "Hello from the service."
    assert completion.choices[0].finish_reason == "stop"
    assert completion.usage is not None


async def test_a_streamed_completion_ends_with_a_usage_chunk(
    api: ApiClient, sdk: AsyncOpenAI
) -> None:
    play(api, ScriptedTurn(text="Streaming works fine."))

    stream = await sdk.chat.completions.create(
        model="scripted",
        messages=[{"role": "user", "content": "Hi"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = [chunk async for chunk in stream]

    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "Streaming works fine."
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices]
    assert finishes[-1] == "stop"
    assert chunks[-1].choices == []
    assert chunks[-1].usage is not None
    assert chunks[-1].usage.completion_tokens > 0


PARALLEL = ScriptedTurn(
    tool_calls=[
        ScriptedToolCall(name="get_weather", args={"city": "Oslo"}, id="call_a"),
        ScriptedToolCall(name="get_weather", args={"city": "Rome"}, id="call_b"),
    ]
)


DELETE_ADA = ScriptedTurn(
    text="That needs your confirmation.",
    tool_calls=[ScriptedToolCall(name="delete_node", args={"id": "Ada Lovelace"}, id="call_d")],
)


@pytest.fixture
async def with_tools(
    make_api: MakeApi, tmp_path: Path
) -> AsyncIterator[tuple[ApiClient, AsyncOpenAI]]:
    """The service with the example graph tools, and the SDK pointed at it."""
    async with make_api(base_settings(tmp_path, example_tools_enabled=True)) as api:
        sdk = sdk_for(api)
        yield api, sdk
        await sdk.close()


async def test_a_server_tool_waiting_for_approval_is_reported_with_its_approval(
    with_tools: tuple[ApiClient, AsyncOpenAI],
) -> None:
    # An OpenAI client can't show a card, but it must learn that the turn stopped on a
    # call a human has to decide, and which approval decides it.
    await _reports_the_waiting_call(*with_tools)


async def _reports_the_waiting_call(api: ApiClient, sdk: AsyncOpenAI) -> None:
    play(api, DELETE_ADA, DELETE_ADA)

    whole = await sdk.chat.completions.create(
        model="scripted", messages=[{"role": "user", "content": "Delete Ada"}]
    )
    stream = await sdk.chat.completions.create(
        model="scripted", messages=[{"role": "user", "content": "Delete Ada"}], stream=True
    )
    streamed = [
        call
        for chunk in [c async for c in stream]
        if chunk.choices
        for call in (chunk.choices[0].delta.model_extra or {}).get("server_tool_calls", [])
    ]

    reported = (whole.choices[0].message.model_extra or {})["server_tool_calls"] + streamed
    assert [(r["id"], r["name"], r["status"]) for r in reported] == [
        ("call_d", "delete_node", "waitingConfirmation")
    ] * 2
    pending = (await api.get("/api/approvals")).json()["data"]
    assert sorted(r["approval_id"] for r in reported) == sorted(a["id"] for a in pending)
    decided = await api.post(
        f"/api/approvals/{reported[1]['approval_id']}", json={"decision": "reject"}
    )
    assert decided.status_code == 200


async def test_the_sdks_stream_helper_gathers_every_server_tool_report(
    with_tools: tuple[ApiClient, AsyncOpenAI],
) -> None:
    # `client.chat.completions.stream()` merges a delta's lists by `index`: the second
    # server tool's report had none, and the helper raised RuntimeError mid-answer.
    api, sdk = with_tools
    graph = [ScriptedToolCall(name="get_graph", id=f"call_g{n}") for n in (1, 2)]
    play(api, ScriptedTurn(tool_calls=graph), ScriptedTurn(text="Two looks."))
    async with sdk.chat.completions.stream(
        model="scripted", messages=[{"role": "user", "content": "Show the graph twice"}]
    ) as stream:
        async for _ in stream:
            pass
        final = await stream.get_final_completion()

    message = final.choices[0].message
    assert message.content == "Two looks."
    reports = (message.model_extra or {})["server_tool_calls"]
    assert [(r["id"], r["name"], r["status"]) for r in reports] == [
        ("call_g1", "get_graph", "success"),
        ("call_g2", "get_graph", "success"),
    ]


async def test_parallel_client_tool_calls_come_back_as_tool_calls(
    api: ApiClient, sdk: AsyncOpenAI
) -> None:
    play(api, PARALLEL)

    completion = await sdk.chat.completions.create(
        model="scripted",
        messages=[{"role": "user", "content": "Weather in Oslo and Rome?"}],
        tools=[WEATHER],  # type: ignore[list-item]
        parallel_tool_calls=True,
    )

    choice = completion.choices[0]
    assert choice.finish_reason == "tool_calls"
    calls = choice.message.tool_calls or []
    assert [(c.id, c.function.name) for c in calls] == [  # type: ignore[union-attr]
        ("call_a", "get_weather"),
        ("call_b", "get_weather"),
    ]
    assert [json.loads(c.function.arguments) for c in calls] == [  # type: ignore[union-attr]
        {"city": "Oslo"},
        {"city": "Rome"},
    ]


async def test_streamed_parallel_tool_calls_accumulate_by_index(
    api: ApiClient, sdk: AsyncOpenAI
) -> None:
    play(api, PARALLEL)

    stream = await sdk.chat.completions.create(
        model="scripted",
        messages=[{"role": "user", "content": "Weather in Oslo and Rome?"}],
        tools=[WEATHER],  # type: ignore[list-item]
        stream=True,
    )
    assert isinstance(stream, openai.AsyncStream)
    calls: dict[int, dict[str, str]] = {}
    finish = None
    async for chunk in stream:
        for choice in chunk.choices:
            finish = choice.finish_reason or finish
            for delta in choice.delta.tool_calls or []:
                call = calls.setdefault(delta.index, {"id": "", "name": "", "args": ""})
                call["id"] += delta.id or ""
                if delta.function is not None:
                    call["name"] += delta.function.name or ""
                    call["args"] += delta.function.arguments or ""

    assert finish == "tool_calls"
    assert [(c["id"], c["name"], json.loads(c["args"])) for c in calls.values()] == [
        ("call_a", "get_weather", {"city": "Oslo"}),
        ("call_b", "get_weather", {"city": "Rome"}),
    ]


async def test_an_unknown_model_raises_not_found(sdk: AsyncOpenAI) -> None:
    with pytest.raises(openai.NotFoundError) as caught:
        await sdk.chat.completions.create(
            model="gpt-99", messages=[{"role": "user", "content": "Hi"}]
        )

    assert caught.value.status_code == 404
    assert caught.value.code == "model_not_found"


async def test_empty_messages_raise_bad_request(sdk: AsyncOpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        await sdk.chat.completions.create(model="scripted", messages=[])

    assert caught.value.status_code == 400
    assert isinstance(caught.value.body, dict)
    assert set(caught.value.body) >= {"message", "type", "param", "code"}


ANTHROPIC_CATALOGUE = json.dumps(
    [
        {
            "id": "claude-test",
            "provider": "anthropic",
            "upstream_model": "claude-haiku-4-5",
            "context_window": 200_000,
        }
    ]
)


@pytest.fixture
async def anthropic_sdk(
    make_api: MakeApi, tmp_path: Path, anthropic_upstream: AnthropicUpstream
) -> AsyncIterator[AsyncOpenAI]:
    settings = base_settings(
        tmp_path,
        models_json=ANTHROPIC_CATALOGUE,
        anthropic_api_key="sk-ant-test-key",
        anthropic_base_url=anthropic_upstream.base_url,
        provider_max_retries=0,
    )
    async with make_api(settings) as api:
        client = sdk_for(api)
        yield client
        await client.close()


async def test_an_anthropic_model_answers_through_the_openai_sdk(
    anthropic_sdk: AsyncOpenAI, anthropic_upstream: AnthropicUpstream
) -> None:
    anthropic_upstream.message(MessageSpec([Text("Bonjour from Claude.")]))

    completion = await anthropic_sdk.chat.completions.create(
        model="claude-test", messages=[{"role": "user", "content": "Hi"}]
    )

    assert completion.choices[0].message.content == "Bonjour from Claude."
    assert completion.model == "claude-test"
    anthropic_upstream.assert_all_used()


async def test_an_anthropic_model_streams_through_the_openai_sdk(
    anthropic_sdk: AsyncOpenAI, anthropic_upstream: AnthropicUpstream
) -> None:
    anthropic_upstream.message(MessageSpec([Text("Streamed from Claude.")]))

    stream = await anthropic_sdk.chat.completions.create(
        model="claude-test",
        messages=[{"role": "user", "content": "Hi"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = [c async for c in stream]

    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == (
        "Streamed from Claude."
    )
    assert chunks[-1].usage is not None
    assert chunks[-1].usage.prompt_tokens == 25


@pytest.fixture
async def openai_sdk(
    make_api: MakeApi, tmp_path: Path, openai_upstream: FakeOpenAIUpstream
) -> AsyncIterator[AsyncOpenAI]:
    settings = base_settings(
        tmp_path,
        openai_api_key="sk-test-not-real",
        openai_base_url=openai_upstream.base_url,
        provider_max_retries=0,
    )
    async with make_api(settings) as api:
        client = sdk_for(api)
        yield client
        await client.close()


async def test_an_upstream_stream_cut_midway_raises_in_the_sdk(
    openai_sdk: AsyncOpenAI, openai_upstream: FakeOpenAIUpstream
) -> None:
    openai_upstream.enqueue(Completion(text="this answer will be cut short", cut_after=4))
    stream = await openai_sdk.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "Hi"}], stream=True
    )
    pieces: list[str] = []

    async def read_all() -> None:
        async for chunk in stream:
            pieces.extend(c.delta.content or "" for c in chunk.choices)

    with pytest.raises(openai.APIError):
        await read_all()

    assert "".join(pieces).startswith("this")


async def test_an_upstream_auth_failure_is_a_server_error_without_the_upstream_message(
    openai_sdk: AsyncOpenAI, openai_upstream: FakeOpenAIUpstream
) -> None:
    openai_upstream.enqueue(unauthorized("sk-test-not-real"))

    with pytest.raises(openai.InternalServerError) as caught:
        await openai_sdk.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "Hi"}]
        )

    assert caught.value.status_code == 502
    assert "Incorrect API key" not in str(caught.value.body)


async def test_the_sdk_lists_the_catalogue_through_v1_models(api: ApiClient) -> None:
    sdk = sdk_for(api)
    try:
        page = await sdk.models.list()
    finally:
        await sdk.close()

    assert [m.id for m in page.data] == ["scripted"]
    assert page.data[0].owned_by == "scripted"
