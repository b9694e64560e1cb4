"""The native SSE events a real run sends are the events openapi/openapi.json documents.

Runs through the API (scripted model, example graph tools) produce every native event
kind: thinking and text, server tools that succeed and fail, an approval, a client tool,
a failed model call, an approval decided in the next stateless turn; the frame a
restarting instance sends last is encoded too. Each frame's `data:` must validate against
the `text/event-stream` schema the route documents in the committed document, and its
`event:` must be the `type` the union discriminates on.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from openapi_schema_validator import OAS31Validator

from app.api.encoders import native
from app.domain.events import ErrorEvent, SequencedEvent, StepReset
from app.domain.messages import Message
from app.domain.parts import TextData, TextPart
from app.openapi_dump import TARGET
from app.providers.scripted import ScriptedError, ScriptedToolCall, ScriptedTurn
from app.settings import Settings
from tests.api.runs.helpers import WEATHER, create, finished, play, send
from tests.api.sse_frames import Frame, parse
from tests.fakes.db import ApiClient, MakeApi

SPEC: dict[str, Any] = json.loads(TARGET.read_text())
EVENTS_PATH = "/api/conversations/{conversation_id}/runs/{run_id}/events"
EVERY_KIND = {
    "run_start",
    "thinking_delta",
    "text_delta",
    "tool_start",
    "tool_args_delta",
    "tool_end",
    "tool_error",
    "confirm_required",
    "part_update",
    "step_reset",
    "message_end",
    "error",
    "run_end",
}


def _documented(path: str, method: str) -> dict[str, Any]:
    """The schema of a frame's data, as the route's `text/event-stream` answer says."""
    content = SPEC["paths"][path][method]["responses"]["200"]["content"]
    frame_ref: str = content["text/event-stream"]["schema"]["$ref"]
    frame = SPEC["components"]["schemas"][frame_ref.rsplit("/", 1)[-1]]
    data = frame["properties"]["data"]
    for branch in [data, *data.get("anyOf", [])]:
        if "contentSchema" in branch:
            assert branch["contentMediaType"] == "application/json"
            schema: dict[str, Any] = branch["contentSchema"]
            return schema
    raise AssertionError(f"{path}: the frame's data has no contentSchema")


def _validator(schema: dict[str, Any]) -> OAS31Validator:
    # The document itself is the root, so `#/components/schemas/...` resolves in it.
    return OAS31Validator({**schema, "components": SPEC["components"]})


def _check(frames: list[Frame], validator: OAS31Validator) -> None:
    mapping = SPEC["components"]["schemas"]["RunEvent"]["discriminator"]["mapping"]
    for frame in frames:
        errors = [e.message for e in validator.iter_errors(frame.data)]
        assert not errors, (frame.event, frame.data, errors)
        assert frame.event == frame.data["type"] and frame.event in mapping, frame


@pytest.fixture
async def client(make_api: MakeApi, app_settings: Settings) -> AsyncIterator[ApiClient]:
    settings = app_settings.model_copy(update={"example_tools_enabled": True})
    async with make_api(settings) as api:
        yield api


def _add_break_delete() -> ScriptedTurn:
    """Thinking and text, then three server tools: one that runs, one whose arguments are
    cut off, one that waits for approval."""
    return ScriptedTurn(
        thinking="Hmm.",
        text="Adding.",
        tool_calls=[
            ScriptedToolCall(name="add_node", args={"label": "P", "name": "Ada"}),
            ScriptedToolCall(name="add_node", args='{"label": '),
            ScriptedToolCall(name="delete_node", args={"id": "Ada"}),
        ],
    )


def _upstream_down() -> ScriptedTurn:
    return ScriptedTurn(error=ScriptedError(status=503, message="upstream down"))


async def _run_every_kind(client: ApiClient) -> list[Frame]:
    cid = await create(client)
    play(client, _add_break_delete())
    frames = await finished(client, await send(client, cid, "Add Ada, then delete her"))
    play(client, ScriptedTurn(tool_calls=[ScriptedToolCall(name="get_weather", args={})]))
    second = await create(client)
    frames += await finished(client, await send(client, second, "Weather?", tools=[WEATHER]))
    play(client, _upstream_down())
    third = await create(client)
    frames += await finished(client, await send(client, third, "Hello"))
    return frames + await _decided_in_the_chat(client)


async def _decided_in_the_chat(client: ApiClient) -> list[Frame]:
    """A stateless turn paused on an approval, continued with the decision: `part_update`."""
    delete = ScriptedToolCall(name="delete_node", id="call_del", args={"id": "Ada"})
    play(client, ScriptedTurn(tool_calls=[delete]), ScriptedTurn(text="Gone."))
    ask = [{"role": "user", "content": "Delete Ada"}]
    paused = (await client.post("/api/chat", json={"messages": ask})).json()["messages"]
    paused[-1]["content"][-1]["data"].update(status="success", result={"approved": False})
    answer = await client.post("/api/chat", json={"messages": paused, "stream": True})
    return parse(answer.text)


async def test_every_native_event_of_a_real_run_matches_the_documented_schema(
    client: ApiClient,
) -> None:
    frames = await _run_every_kind(client)

    _check(frames, _validator(_documented(EVENTS_PATH, "get")))
    # A failover after the first byte needs two real providers: its run is
    # tests/api/test_failover_after_first_byte.py; its frame is checked below.
    assert {f.event for f in frames} == EVERY_KIND - {"step_reset"}
    assert {f.data["kind"] for f in frames if f.event == "confirm_required"} == {
        "approval",
        "client_tool",
    }


def test_a_step_reset_matches_the_schema() -> None:
    kept = Message(
        id="msg_1",
        role="assistant",
        content=[TextPart(data=TextData(text="Before the tools."))],
        metadata={"model": "claude", "fallback_from": "gpt"},
    )
    reset = StepReset(
        run_id="run_1",
        message_id="msg_1",
        message=kept,
        model="claude",
        failed_model="gpt",
        code="provider_unavailable",
    )

    frames = parse(native.frame(SequencedEvent(seq=7, event=reset)).decode())

    _check(frames, _validator(_documented(EVENTS_PATH, "get")))
    assert frames[0].data["message"]["content"][0]["data"]["text"] == "Before the tools."


def test_the_farewell_of_a_restarting_instance_matches_the_schema() -> None:
    event = ErrorEvent(
        run_id="run_1", code="shutting_down", message="Resume.", retryable=True, resume_url="/x"
    )
    plain = ErrorEvent(run_id="run_1", code="failed", message="No.")

    frames = parse(b"".join(map(native.error_frame, [event, plain])).decode())

    _check(frames, _validator(_documented(EVENTS_PATH, "get")))
    assert frames[0].data["resume_url"] == "/x"
    assert "resume_url" not in frames[1].data  # optional fields are left out, not null


@pytest.mark.parametrize(
    ("path", "method"),
    [
        ("/api/chat", "post"),
        ("/api/conversations/{conversation_id}/messages", "post"),
        ("/api/conversations/{conversation_id}/messages/{message_id}", "put"),
        ("/api/conversations/{conversation_id}/regenerate", "post"),
        (EVENTS_PATH, "get"),
        ("/api/conversations/{conversation_id}/tool-results", "post"),
    ],
)
def test_every_native_stream_documents_the_event_union(path: str, method: str) -> None:
    content = SPEC["paths"][path][method]["responses"]["200"]["content"]
    assert content["text/event-stream"]["schema"] == {"$ref": "#/components/schemas/RunEventFrame"}
    assert _documented(path, method) == {"$ref": "#/components/schemas/RunEvent"}


def _data_lines(body: str) -> list[str]:
    return [line.removeprefix("data: ") for line in body.splitlines() if line.startswith("data:")]


async def test_streamed_chat_completion_chunks_match_the_documented_schema(
    client: ApiClient,
) -> None:
    validator = _validator(_documented("/v1/chat/completions", "post"))
    play(
        client,
        ScriptedTurn(
            thinking="Hmm.",
            text="Adding.",
            tool_calls=[ScriptedToolCall(name="add_node", args={"label": "P", "name": "Ada"})],
        ),
        ScriptedTurn(text="Now the weather.", tool_calls=[ScriptedToolCall(name="get_weather")]),
        # Output first, then the failure: a failure before any output is an HTTP status.
        ScriptedTurn(
            text="Adding Bob.",
            tool_calls=[ScriptedToolCall(name="add_node", args={"label": "P", "name": "Bob"})],
        ),
        _upstream_down(),
    )
    chat = {"model": "scripted", "stream": True, "stream_options": {"include_usage": True}}
    bodies = [
        await client.post(
            "/v1/chat/completions",
            json={**chat, "messages": [{"role": "user", "content": "Add Ada"}], "tools": [WEATHER]},
        ),
        await client.post(
            "/v1/chat/completions", json={**chat, "messages": [{"role": "user", "content": "x"}]}
        ),
    ]

    datas = [d for body in bodies for d in _data_lines(body.text)]
    assert datas.count("[DONE]") == 2
    frames = [json.loads(d) for d in datas if d != "[DONE]"]
    for frame in frames:
        errors = [e.message for e in validator.iter_errors(frame)]
        assert not errors, (frame, errors)
    deltas = [f["choices"][0]["delta"] for f in frames if f.get("choices")]
    assert {key for delta in deltas for key in delta} == {
        "role",
        "content",
        "reasoning_content",
        "tool_calls",
        "server_tool_calls",
    }
    assert any("usage" in f for f in frames) and any("error" in f for f in frames)


async def test_responses_stream_events_match_the_documented_schema(client: ApiClient) -> None:
    validator = _validator(_documented("/v1/responses", "post"))
    mapping = SPEC["components"]["schemas"]["ResponseStreamEvent"]["discriminator"]["mapping"]
    play(
        client,
        _add_break_delete(),
        ScriptedTurn(text="Weather next.", tool_calls=[ScriptedToolCall(name="get_weather")]),
        _upstream_down(),
    )
    tool = {"type": "function", "name": "get_weather", "parameters": {"type": "object"}}
    base = {"model": "scripted", "stream": True}
    bodies = [
        await client.post("/v1/responses", json={**base, "input": "Add Ada, delete her"}),
        await client.post("/v1/responses", json={**base, "input": "Weather", "tools": [tool]}),
        await client.post("/v1/responses", json={**base, "input": "x"}),
    ]

    frames = [f for body in bodies for f in parse(body.text)]
    for frame in frames:
        errors = [e.message for e in validator.iter_errors(frame.data)]
        assert not errors, (frame.event, frame.data, errors)
        assert frame.event == frame.data["type"] and frame.event in mapping, frame
    items = {f.data["item"]["type"] for f in frames if f.event == "response.output_item.done"}
    assert items == {"message", "reasoning", "mcp_call", "function_call", "mcp_approval_request"}
    assert {"error", "response.failed", "response.mcp_call.failed"} <= {f.event for f in frames}


@pytest.mark.parametrize("major", [5, 6])
async def test_ui_message_stream_chunks_match_the_documented_schema(
    client: ApiClient, major: int
) -> None:
    validator = _validator(_documented("/api/ui/chat", "post"))
    play(
        client,
        _add_break_delete(),
        _upstream_down(),
    )
    bodies = []
    for chat_id, text in [(f"ui-{major}-a", "Add Ada, delete her"), (f"ui-{major}-b", "x")]:
        message = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": text}]}
        body = {"id": chat_id, "messages": [message], "trigger": "submit-message"}
        bodies.append(await client.post(f"/api/ui/chat?v={major}", json=body))

    datas = [d for body in bodies for d in _data_lines(body.text)]
    assert datas.count("[DONE]") == 2
    chunks = [json.loads(d) for d in datas if d != "[DONE]"]
    for chunk in chunks:
        errors = [e.message for e in validator.iter_errors(chunk)]
        assert not errors, (chunk, errors)
    kinds = {c["type"] for c in chunks}
    approval = "tool-approval-request" if major >= 6 else "data-approval"
    assert {approval, "tool-input-error", "tool-output-available", "error", "finish"} <= kinds


def test_the_union_has_one_schema_per_event_discriminated_on_type() -> None:
    union = SPEC["components"]["schemas"]["RunEvent"]
    assert union["discriminator"]["propertyName"] == "type"
    assert set(union["discriminator"]["mapping"]) == EVERY_KIND
    for name, ref in union["discriminator"]["mapping"].items():
        event = SPEC["components"]["schemas"][ref.rsplit("/", 1)[-1]]
        assert event["properties"]["type"]["const"] == name
        assert {"type", "run_id"} <= set(event["required"]), name
    frame = SPEC["components"]["schemas"]["RunEventFrame"]
    assert frame["properties"]["event"]["enum"] == sorted(EVERY_KIND)
