"""The server-side tool loop through the real openai and anthropic SDKs.

The fake upstreams play the model; chat-bff runs the tools in between and sends their
results back in the vendor's own shape (`role: tool` / `tool_result` blocks).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from app.settings import Settings
from tests.api.sse_frames import Frame, parse
from tests.fakes.anthropic_upstream import AnthropicUpstream, MessageSpec, Text, ToolUse
from tests.fakes.db import ApiClient, MakeApi
from tests.fakes.openai_upstream import Completion, FakeOpenAIUpstream, ToolCall

TOOLS = ["tests.support.sample_tools"]


def settings_for(tmp_path: Path, **extra: Any) -> Settings:
    return Settings(
        _env_file=None,
        environment="test",
        database_url=f"sqlite+aiosqlite:///{tmp_path / 'loop.db'}",
        tool_modules=TOOLS,
        example_tools_enabled=False,
        provider_max_retries=0,
        **extra,
    )


@pytest.fixture
async def gpt(
    make_api: MakeApi, tmp_path: Path, openai_upstream: FakeOpenAIUpstream
) -> AsyncIterator[ApiClient]:
    settings = settings_for(
        tmp_path,
        openai_api_key=SecretStr("sk-test-not-real"),
        openai_base_url=openai_upstream.base_url,
        max_iterations=3,
    )
    async with make_api(settings) as api:
        yield api


@pytest.fixture
async def claude(
    make_api: MakeApi, tmp_path: Path, anthropic_upstream: AnthropicUpstream
) -> AsyncIterator[ApiClient]:
    settings = settings_for(
        tmp_path,
        models_json=json.dumps(
            [{"id": "claude-test", "provider": "anthropic", "upstream_model": "claude-haiku-4-5"}]
        ),
        anthropic_api_key=SecretStr("sk-ant-test-not-real"),
        anthropic_base_url=anthropic_upstream.base_url,
    )
    async with make_api(settings) as api:
        yield api


async def chat(api: ApiClient, text: str = "Go") -> list[Frame]:
    body = {"messages": [{"role": "user", "content": text}], "stream": True}
    response = await api.post("/api/chat", json=body)
    assert response.status_code == 200, response.text
    return parse(response.text)


def tool_events(frames: list[Frame]) -> list[tuple[str, str, str]]:
    return [
        (f.event, f.data["part"]["data"]["toolName"], f.data["part"]["data"]["status"])
        for f in frames
        if f.event in ("tool_end", "tool_error")
    ]


def tool_messages(body: dict[str, Any]) -> dict[str, Any]:
    return {m["tool_call_id"]: m["content"] for m in body["messages"] if m["role"] == "tool"}


# -- OpenAI ------------------------------------------------------------------------------


async def test_openai_a_server_tool_runs_and_its_result_goes_back_to_the_model(
    gpt: ApiClient, openai_upstream: FakeOpenAIUpstream
) -> None:
    openai_upstream.enqueue(
        Completion(tool_calls=[ToolCall(name="add", args={"a": 2, "b": 3}, id="call_1")]),
        Completion(text="It is 5."),
    )

    frames = await chat(gpt)

    assert tool_events(frames) == [("tool_end", "add", "success")]
    assert frames[-1].data["status"] == "completed"
    first, second = openai_upstream.request_bodies()
    assert [t["function"]["name"] for t in first["tools"]] == ["add", "slow", "boom"]
    assert json.loads(tool_messages(second)["call_1"]) == {"sum": 5}


async def test_openai_parallel_server_calls_all_run_before_the_next_model_call(
    gpt: ApiClient, openai_upstream: FakeOpenAIUpstream
) -> None:
    openai_upstream.enqueue(
        Completion(
            tool_calls=[
                ToolCall(name="add", args={"a": 1, "b": 1}, id="call_a"),
                ToolCall(name="add", args={"a": 2, "b": 2}, id="call_b"),
            ],
            interleave=True,
        ),
        Completion(text="2 and 4."),
    )

    frames = await chat(gpt)

    assert tool_events(frames) == [("tool_end", "add", "success")] * 2
    results = tool_messages(openai_upstream.request_bodies()[1])
    assert {k: json.loads(v) for k, v in results.items()} == {
        "call_a": {"sum": 2},
        "call_b": {"sum": 4},
    }


async def test_openai_invalid_arguments_go_back_as_an_error_and_the_model_recovers(
    gpt: ApiClient, openai_upstream: FakeOpenAIUpstream
) -> None:
    openai_upstream.enqueue(
        Completion(tool_calls=[ToolCall(name="add", args={"a": 1, "c": 9}, id="call_1")]),
        Completion(tool_calls=[ToolCall(name="add", args={"a": 1, "b": 9}, id="call_2")]),
        Completion(text="10."),
    )

    frames = await chat(gpt)

    assert tool_events(frames) == [("tool_error", "add", "error"), ("tool_end", "add", "success")]
    assert "call_1" in tool_messages(openai_upstream.request_bodies()[1])
    assert frames[-1].data["status"] == "completed"


@pytest.mark.parametrize(("tool", "problem"), [("slow", "time"), ("boom", "fail")])
async def test_openai_a_tool_that_fails_or_times_out_is_an_error_result_not_a_crash(
    gpt: ApiClient, openai_upstream: FakeOpenAIUpstream, tool: str, problem: str
) -> None:
    openai_upstream.enqueue(
        Completion(tool_calls=[ToolCall(name=tool, id="call_1")]),
        Completion(text="Sorry, that did not work."),
    )

    frames = await chat(gpt)

    [error] = [f for f in frames if f.event == "tool_error"]
    assert problem in error.data["error"].lower()
    assert frames[-1].data["status"] == "completed"
    assert "call_1" in tool_messages(openai_upstream.request_bodies()[1])


async def test_openai_clients_are_told_when_a_server_tool_failed_behind_the_answer(
    gpt: ApiClient, openai_upstream: FakeOpenAIUpstream
) -> None:
    openai_upstream.enqueue(
        Completion(tool_calls=[ToolCall(name="boom", id="call_1")]),
        Completion(text="All done!"),
        Completion(tool_calls=[ToolCall(name="boom", id="call_2")]),
        Completion(text="All done!"),
    )
    body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Go"}]}

    whole = (await gpt.post("/v1/chat/completions", json=body)).json()
    streamed = await gpt.post("/v1/chat/completions", json={**body, "stream": True})

    message = whole["choices"][0]["message"]
    assert message["content"] == "All done!"
    [failed] = message["server_tool_calls"]
    assert (failed["name"], failed["status"]) == ("boom", "error")
    assert "fail" in failed["error"].lower()
    chunks = [json.loads(x[6:]) for x in streamed.text.splitlines() if x.startswith("data: {")]
    reported = [
        call
        for c in chunks
        if c["choices"]
        for call in c["choices"][0]["delta"].get("server_tool_calls", [])
    ]
    assert [(r["name"], r["status"]) for r in reported] == [("boom", "error")]


async def test_openai_the_iteration_cap_ends_the_run_with_max_iterations(
    gpt: ApiClient, openai_upstream: FakeOpenAIUpstream
) -> None:
    for n in range(3):
        openai_upstream.enqueue(
            Completion(tool_calls=[ToolCall(name="add", args={"a": n, "b": 1}, id=f"call_{n}")])
        )

    frames = await chat(gpt)

    assert len(openai_upstream.request_bodies()) == 3
    assert frames[-1].data["status"] == "max_iterations"
    assert frames[-1].data["usage"]["model_calls"] == 3


# -- Anthropic ---------------------------------------------------------------------------


async def test_anthropic_a_server_tool_runs_and_its_result_goes_back_as_tool_result(
    claude: ApiClient, anthropic_upstream: AnthropicUpstream
) -> None:
    anthropic_upstream.message(
        MessageSpec([Text("Adding."), ToolUse(name="add", input={"a": 4, "b": 5}, id="toolu_1")])
    )
    anthropic_upstream.message(MessageSpec([Text("It is 9.")]))

    frames = await chat(claude)

    assert tool_events(frames) == [("tool_end", "add", "success")]
    second = anthropic_upstream.requests[1].json
    [result] = [
        b
        for m in second["messages"]
        if m["role"] == "user"
        for b in m["content"]
        if isinstance(b, dict) and b.get("type") == "tool_result"
    ]
    assert result["tool_use_id"] == "toolu_1"
    assert not result.get("is_error")
    assert "9" in json.dumps(result["content"])


async def test_anthropic_parallel_calls_with_one_failure_send_both_results(
    claude: ApiClient, anthropic_upstream: AnthropicUpstream
) -> None:
    anthropic_upstream.message(
        MessageSpec(
            [
                ToolUse(name="add", input={"a": 1, "b": 2}, id="toolu_ok"),
                ToolUse(name="boom", input={}, id="toolu_bad"),
            ]
        )
    )
    anthropic_upstream.message(MessageSpec([Text("One worked.")]))

    frames = await chat(claude)

    assert sorted(tool_events(frames)) == [
        ("tool_end", "add", "success"),
        ("tool_error", "boom", "error"),
    ]
    second = anthropic_upstream.requests[1].json
    results = {
        b["tool_use_id"]: bool(b.get("is_error"))
        for m in second["messages"]
        for b in (m["content"] if isinstance(m["content"], list) else [])
        if b.get("type") == "tool_result"
    }
    assert results == {"toolu_ok": False, "toolu_bad": True}
    assert frames[-1].data["status"] == "completed"
