"""`POST /api/chat`: the stateless turn, answered whole or as native SSE."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from app.domain.parts import ToolPart
from app.providers.scripted import (
    Script,
    ScriptedError,
    ScriptedProvider,
    ScriptedToolCall,
    ScriptedTurn,
)
from app.settings import Settings
from tests.api.sse_frames import Frame, parse
from tests.fakes.db import ApiClient, MakeApi

URL = "/api/chat"
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather for a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}
CLOCK = {
    "type": "function",
    "function": {
        "name": "get_time",
        "description": "Local time in a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(
        _env_file=None,
        database_url=f"sqlite+aiosqlite:///{tmp_path / 'chat.db'}",
        environment="test",
        log_json=False,
        scripted_delay_ms=0,
    )


def play(client: ApiClient, *turns: ScriptedTurn, delay_ms: float = 0) -> ScriptedProvider:
    """Script the next model calls: a fresh sequence provider behind the `scripted` model."""
    provider = ScriptedProvider(Script(mode="sequence", turns=list(turns)), delay_ms=delay_ms)
    client.services.providers["scripted"] = provider
    return provider


@pytest.fixture
async def client(make_api: MakeApi, settings: Settings) -> AsyncIterator[ApiClient]:
    async with make_api(
        settings, providers={"scripted": ScriptedProvider(Script(mode="sequence", turns=[]))}
    ) as api:
        yield api


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


async def stream(client: ApiClient, body: dict[str, Any], **headers: str) -> list[Frame]:
    response = await client.post(URL, json=body, headers=headers)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/event-stream")
    return parse(response.text)


async def test_a_non_streamed_answer_is_a_chat_completion_with_typed_parts(
    client: ApiClient,
) -> None:
    play(client, ScriptedTurn(text="Hello there."))

    response = await client.post(URL, json={"messages": [user("Hi")]})

    assert response.status_code == 200, response.text
    body = response.json()
    assert body["object"] == "chat.completion"
    assert body["choices"][0]["message"]["role"] == "assistant"
    assert body["choices"][0]["message"]["content"] == "Hello there."
    assert body["choices"][0]["finish_reason"] == "stop"
    assert body["message"]["role"] == "assistant"
    assert body["message"]["content"] == [
        # Optional fields (the part id here) are left out, never null.
        {"type": "text", "data": {"text": "Hello there."}}
    ]
    assert [m["role"] for m in body["messages"]] == ["user", "assistant"]
    assert body["messages"][-1] == body["message"]


@pytest.mark.parametrize(
    ("extra", "headers"),
    [({"stream": True}, {}), ({}, {"Accept": "text/event-stream"})],
    ids=["stream-flag", "accept-header"],
)
async def test_a_streamed_answer_is_native_sse_with_gap_free_ids(
    client: ApiClient, extra: dict[str, Any], headers: dict[str, str]
) -> None:
    play(client, ScriptedTurn(text="One two three four."))

    response = await client.post(URL, json={"messages": [user("Hi")], **extra}, headers=headers)

    assert response.status_code == 200
    assert response.headers["cache-control"] == "no-cache"
    assert response.headers["x-accel-buffering"] == "no"
    frames = parse(response.text)
    assert [f.id for f in frames] == list(range(1, len(frames) + 1))
    assert frames[0].event == "run_start"
    assert frames[-1].event == "run_end"
    assert frames[-1].data["status"] == "completed"
    run_id = frames[0].data["run_id"]
    assert all(f.data["run_id"] == run_id for f in frames)
    assert all(f.event == f.data["type"] for f in frames)


async def test_text_that_looks_like_sse_stays_inside_one_event(client: ApiClient) -> None:
    tricky = "Look:\n\nevent: x\ndata: y\n\nid: 99"
    play(client, ScriptedTurn(text=tricky))

    frames = await stream(client, {"messages": [user("Hi")], "stream": True})

    assert {f.event for f in frames} <= {
        "run_start",
        "text_delta",
        "message_end",
        "run_end",
    }
    assert "".join(f.data["delta"] for f in frames if f.event == "text_delta") == tricky
    [end] = [f for f in frames if f.event == "message_end"]
    assert end.data["message"]["content"][0]["data"]["text"] == tricky


async def test_streaming_and_not_give_identical_parts(client: ApiClient) -> None:
    turn = ScriptedTurn(
        text="Checking the weather.",
        tool_calls=[ScriptedToolCall(name="get_weather", args={"city": "Oslo"}, id="call_1")],
    )
    body = {"messages": [user("Weather in Oslo?")], "tools": [WEATHER]}
    play(client, turn)
    whole = (await client.post(URL, json=body)).json()["message"]["content"]
    play(client, turn)

    frames = await stream(client, {**body, "stream": True})

    [end] = [f for f in frames if f.event == "message_end"]
    assert end.data["message"]["content"] == whole
    # Optional fields are left out, never null (a client-tool card has no result yet).
    tool_starts = [f.data["part"] for f in frames if f.event == "tool_start"]
    for part in [*whole, *tool_starts]:
        assert None not in part.values(), part
        assert None not in part["data"].values(), part
    assert "result" not in whole[1]["data"]


@pytest.mark.parametrize("field", ["api_key", "base_url", "api_base"])
async def test_a_smuggled_provider_field_is_refused(client: ApiClient, field: str) -> None:
    response = await client.post(URL, json={"messages": [user("Hi")], field: "sk-evil"})

    assert response.status_code == 422
    error = response.json()["error"]
    assert error["code"] == "validation_error"
    assert field in error["message"]
    assert "sk-evil" not in response.text


@pytest.mark.parametrize("field", ["owner_id", "user_id", "base_url"])
async def test_an_identity_field_smuggled_inside_a_message_is_refused(
    client: ApiClient, field: str
) -> None:
    message = {**user("Hi"), field: "bob"}

    response = await client.post(URL, json={"messages": [message]})

    assert response.status_code == 422
    error = response.json()["error"]
    assert error["code"] == "forbidden_field"
    assert error["param"] == f"messages[0].{field}"


async def test_a_body_that_is_not_json_is_a_400_invalid_json(client: ApiClient) -> None:
    response = await client.post(
        URL, content=b'{"messages": [', headers={"content-type": "application/json"}
    )

    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_json"


async def test_a_json_body_nested_too_deeply_to_parse_is_a_400_invalid_request(
    client: ApiClient,
) -> None:
    response = await client.post(
        URL, content=b"[" * 100_000, headers={"content-type": "application/json"}
    )

    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_request"


async def test_an_unknown_model_is_model_not_found(client: ApiClient) -> None:
    response = await client.post(URL, json={"messages": [user("Hi")], "model": "gpt-99"})

    assert response.status_code == 404
    assert response.json()["error"]["code"] == "model_not_found"


async def test_aikit_shaped_messages_are_accepted(client: ApiClient) -> None:
    provider = play(client, ScriptedTurn(text="Sure."))
    history = [
        {"id": "m1", "role": "user", "content": [{"type": "text", "data": {"text": "Hi"}}]},
        {"id": "m2", "role": "assistant", "content": [{"type": "text", "data": {"text": "Hey"}}]},
        {"id": "m3", "role": "user", "content": "And now?"},
    ]

    response = await client.post(URL, json={"messages": history})

    assert response.status_code == 200, response.text
    seen = provider.requests[0].messages
    assert [(m.role, m.text()) for m in seen] == [
        ("user", "Hi"),
        ("assistant", "Hey"),
        ("user", "And now?"),
    ]
    assert [m["id"] for m in response.json()["messages"][:3]] == ["m1", "m2", "m3"]


async def test_a_client_tool_call_comes_back_as_tool_calls(client: ApiClient) -> None:
    play(
        client,
        ScriptedTurn(
            tool_calls=[ScriptedToolCall(name="get_weather", args={"city": "Oslo"}, id="call_1")]
        ),
    )

    response = await client.post(URL, json={"messages": [user("Weather?")], "tools": [WEATHER]})

    choice = response.json()["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    [tool_call] = choice["message"]["tool_calls"]
    assert tool_call["id"] == "call_1"
    assert tool_call["function"]["name"] == "get_weather"
    assert json.loads(tool_call["function"]["arguments"]) == {"city": "Oslo"}
    assert response.json()["status"] == "requires_action"


async def test_the_aikit_reference_exchange_round_trips(client: ApiClient) -> None:
    provider = play(
        client,
        ScriptedTurn(
            tool_calls=[ScriptedToolCall(name="get_weather", args={"city": "Oslo"}, id="call_w")]
        ),
        ScriptedTurn(text="It is sunny in Oslo."),
    )
    history: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a helpful assistant."},
        user("What is the weather in Oslo?"),
    ]
    first = (await client.post(URL, json={"messages": history, "tools": [WEATHER, CLOCK]})).json()
    assistant = first["choices"][0]["message"]
    history += [
        assistant,
        {"role": "tool", "tool_call_id": "call_w", "content": json.dumps({"sky": "sunny"})},
    ]

    second = await client.post(URL, json={"messages": history, "tools": [WEATHER, CLOCK]})

    assert second.status_code == 200, second.text
    answer = second.json()["choices"][0]
    assert answer["finish_reason"] == "stop"
    assert answer["message"]["content"] == "It is sunny in Oslo."
    request = provider.requests[1]
    assert {t.name for t in request.tools} == {"get_weather", "get_time"}
    assert request.messages[0].role == "system"
    [part] = [p for m in request.messages for p in m.parts() if isinstance(p, ToolPart)]
    assert part.data.status == "success"
    assert part.data.result == {"sky": "sunny"}
    provider.assert_all_used()


async def test_a_failing_model_call_answers_502_with_an_error_body(client: ApiClient) -> None:
    play(client, ScriptedTurn(error=ScriptedError(status=500, message="upstream exploded")))

    response = await client.post(URL, json={"messages": [user("Hi")]})

    assert response.status_code == 502
    assert response.json()["error"]["code"] == "provider_unavailable"


async def test_a_rate_limited_model_call_answers_429(client: ApiClient) -> None:
    play(client, ScriptedTurn(error=ScriptedError(status=429, message="slow down")))

    response = await client.post(URL, json={"messages": [user("Hi")]})

    assert response.status_code == 429
    assert "error" in response.json()


async def test_a_failing_model_call_streams_an_error_then_run_end_failed(client: ApiClient) -> None:
    play(client, ScriptedTurn(error=ScriptedError(status=500)))

    frames = await stream(client, {"messages": [user("Hi")], "stream": True})

    assert [f.event for f in frames][-3:] == ["error", "message_end", "run_end"]
    assert frames[-3].data["retryable"] is True
    assert frames[-1].data["status"] == "failed"


async def test_the_iteration_cap_finishes_with_length(
    make_api: MakeApi, settings: Settings
) -> None:
    # A model that keeps calling a working server tool never ends on its own: the cap does.
    with_tools = settings.model_copy(update={"example_tools_enabled": True, "max_iterations": 3})
    provider = ScriptedProvider(
        Script(
            mode="sequence",
            turns=[
                ScriptedTurn(tool_calls=[ScriptedToolCall(name="get_graph", id=f"c{i}")])
                for i in range(3)
            ],
        )
    )

    async with make_api(with_tools, providers={"scripted": provider}) as api:
        response = await api.post(URL, json={"messages": [user("Loop")]})

    body = response.json()
    assert body["status"] == "max_iterations"
    assert body["choices"][0]["finish_reason"] == "length"
    assert body["run_usage"]["model_calls"] == 3
    provider.assert_all_used()


async def test_an_idle_stream_carries_heartbeat_comments(
    make_api: MakeApi, settings: Settings
) -> None:
    stalling = ScriptedProvider(
        Script(mode="sequence", turns=[ScriptedTurn(text="Finally.", stall_seconds=0.5)])
    )
    quick = settings.model_copy(update={"heartbeat_seconds": 0.05})

    async with make_api(quick, providers={"scripted": stalling}) as api:
        response = await api.post(URL, json={"messages": [user("Hi")], "stream": True})

    assert ": heartbeat" in response.text
    assert parse(response.text)[-1].event == "run_end"
