"""`/api/agui`: an AG-UI `RunAgentInput` becomes a durable conversation turn streamed as
AG-UI events; interrupts are stored approvals decided by `resume` entries under every rule
of the approvals API. (The real `@ag-ui/client` drives the same route in
`tests/e2e/agui/`.)"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any
from uuid import uuid4

import pytest
from ag_ui.core import Event
from pydantic import TypeAdapter

from app.api.agui import CONTEXT_HEADER, MAX_CONTEXT_CHARS
from app.api.ui_chat import conversation_id_for
from app.providers.scripted import (
    Script,
    ScriptedError,
    ScriptedProvider,
    ScriptedToolCall,
    ScriptedTurn,
)
from app.settings import Settings
from tests.api.test_approvals import node_names
from tests.fakes.db import ApiClient, MakeApi

EVENTS: TypeAdapter[Event] = TypeAdapter(Event)
PICK = {
    "name": "pick_color",
    "description": "Ask the person for a color.",
    "parameters": {"type": "object", "properties": {"hint": {"type": "string"}}},
}
SCRIPT = Script(
    mode="rules",
    turns=[
        ScriptedTurn(after_tool="pick_color", text="You picked it."),
        ScriptedTurn(after_tool="add_node", text="Added."),
        ScriptedTurn(after_tool="delete_node", text="Decided."),
        ScriptedTurn(
            match="color",
            text="Let me ask.",
            tool_calls=[ScriptedToolCall(name="pick_color", args={"hint": "warm"})],
        ),
        ScriptedTurn(
            match="^add",
            tool_calls=[
                ScriptedToolCall(name="add_node", args={"label": "Person", "name": "Ada Lovelace"})
            ],
        ),
        ScriptedTurn(
            match="^delete",
            text="Needs a yes.",
            tool_calls=[ScriptedToolCall(name="delete_node", args={"id": "Ada Lovelace"})],
        ),
        ScriptedTurn(match="fail", error=ScriptedError(status=400, message="upstream said no")),
        ScriptedTurn(text="Hello from the script."),
    ],
)


@pytest.fixture
async def client(make_api: MakeApi, app_settings: Settings) -> AsyncIterator[ApiClient]:
    settings = app_settings.model_copy(update={"example_tools_enabled": True})
    async with make_api(settings, providers={"scripted": ScriptedProvider(SCRIPT)}) as api:
        yield api


def user(text: str, message_id: str = "u1") -> dict[str, Any]:
    return {"id": message_id, "role": "user", "content": text}


def events(body: str) -> list[dict[str, Any]]:
    blocks = [b for b in body.split("\n\n") if b.startswith("data: ")]
    out = [json.loads(b.removeprefix("data: ")) for b in blocks]
    for event in out:
        EVENTS.validate_python(event)  # every event is a valid AG-UI 1.0 event
    return out


async def run(
    client: ApiClient,
    thread: str,
    messages: list[dict[str, Any]],
    *,
    status: int = 200,
    run_id: str | None = None,
    **extra: Any,
) -> Any:
    """One run; every run has a runId of its own, as AG-UI clients make them (the same
    runId sent again is a retry of that run)."""
    run_id = run_id or f"run-{len(messages)}-{uuid4().hex[:8]}"
    body = {"threadId": thread, "runId": run_id, "messages": messages, **extra}
    response = await client.post("/api/agui", json=body)
    assert response.status_code == status, response.text
    if status != 200:
        return response.json()
    assert response.headers["content-type"].startswith("text/event-stream")
    return events(response.text)


def types(stream: list[dict[str, Any]]) -> list[str]:
    """Event types, a run of deltas of one kind counted once."""
    out: list[str] = []
    for event in stream:
        kind = event["type"]
        if not (out and out[-1] == kind and kind.endswith(("_CONTENT", "_ARGS"))):
            out.append(kind)
    return out


def text_of(stream: list[dict[str, Any]]) -> str:
    return "".join(e["delta"] for e in stream if e["type"] == "TEXT_MESSAGE_CONTENT")


async def stored(client: ApiClient, thread: str) -> list[dict[str, Any]]:
    cid = conversation_id_for("local", thread)
    messages: list[dict[str, Any]] = (await client.get(f"/api/conversations/{cid}")).json()[
        "messages"
    ]
    return messages


async def test_a_thread_is_a_durable_conversation_that_later_runs_continue(
    client: ApiClient,
) -> None:
    first = await run(client, "t-text", [user("hello")], run_id="run-1")
    said = {"id": first[1]["messageId"], "role": "assistant", "content": text_of(first)}
    second = await run(client, "t-text", [user("hello"), said, user("hello again", "u2")])

    for stream in (first, second):
        assert types(stream) == [
            "RUN_STARTED",
            "TEXT_MESSAGE_START",
            "TEXT_MESSAGE_CONTENT",
            "TEXT_MESSAGE_END",
            "RUN_FINISHED",
        ]
        assert text_of(stream) == "Hello from the script."
    started, finished = first[0], first[-1]
    assert (started["threadId"], started["runId"]) == ("t-text", "run-1")
    assert started["protocolVersion"] == "1.0"
    assert finished["outcome"] == {"type": "success"}
    assert finished["usage"][0]["totalTokens"] > 0
    cid = started["metadata"]["chatBff"]["conversationId"]
    assert cid == conversation_id_for("local", "t-text")
    messages = await stored(client, "t-text")
    assert [m["role"] for m in messages] == ["user", "assistant"] * 2
    assert messages[1]["id"] == first[1]["messageId"]


async def test_a_server_tool_streams_its_call_and_result_then_the_next_segment(
    client: ApiClient,
) -> None:
    stream = await run(client, "t-tool", [user("add Ada")])

    assert types(stream)[:6] == [
        "RUN_STARTED",
        "TOOL_CALL_START",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_END",
        "TOOL_CALL_RESULT",
        "TEXT_MESSAGE_START",
    ]
    start = stream[1]
    result = next(e for e in stream if e["type"] == "TOOL_CALL_RESULT")
    text = next(e for e in stream if e["type"] == "TEXT_MESSAGE_START")
    args = "".join(e["delta"] for e in stream if e["type"] == "TOOL_CALL_ARGS")
    assert start["toolCallName"] == "add_node"
    assert json.loads(args)["name"] == "Ada Lovelace"
    assert result["toolCallId"] == start["toolCallId"] and result["role"] == "tool"
    assert json.loads(result["content"])["name"] == "Ada Lovelace"
    # The answer after the result is the next assistant message, as AG-UI histories go.
    assert text["messageId"] != start["parentMessageId"]
    assert text_of(stream) == "Added." and stream[-1]["outcome"]["type"] == "success"
    assert await node_names(client) == ["Ada Lovelace"]


def picked(start: dict[str, Any]) -> list[dict[str, Any]]:
    """The client's history answering the `pick_color` call `start` began with "red"."""
    call = {
        "id": start["toolCallId"],
        "type": "function",
        "function": {"name": "pick_color", "arguments": '{"hint":"warm"}'},
    }
    return [
        user("pick a color"),
        {"id": start["parentMessageId"], "role": "assistant", "toolCalls": [call]},
        {"id": "tm1", "role": "tool", "toolCallId": start["toolCallId"], "content": '"red"'},
    ]


async def test_a_client_tool_waits_for_the_clients_tool_message_and_the_run_continues(
    client: ApiClient,
) -> None:
    asked = await run(client, "t-client", [user("pick a color")], tools=[PICK])
    start = next(e for e in asked if e["type"] == "TOOL_CALL_START")
    assert start["toolCallName"] == "pick_color"
    assert "TOOL_CALL_RESULT" not in types(asked)
    assert asked[-1]["outcome"] == {
        "type": "success",
        "pendingToolCallIds": [start["toolCallId"]],
    }

    history = picked(start)
    answered = await run(client, "t-client", history, tools=[PICK])

    assert text_of(answered) == "You picked it."
    assert answered[-1]["outcome"] == {"type": "success"}
    messages = await stored(client, "t-client")
    [tool] = [p for m in messages for p in m["content"] if p["type"] == "tool"]
    assert (tool["data"]["status"], tool["data"]["result"]) == ("success", "red")

    again = await run(client, "t-client", history, tools=[PICK], status=404)
    assert again["error"]["code"] == "tool_call_not_found"


async def _interrupted(client: ApiClient, thread: str) -> dict[str, Any]:
    stream = await run(client, thread, [user("delete Ada")])
    outcome: dict[str, Any] = stream[-1]["outcome"]
    assert outcome["type"] == "interrupt"
    return outcome


async def test_an_approval_is_an_interrupt_and_a_resume_entry_decides_it(
    client: ApiClient,
) -> None:
    await run(client, "t-approve", [user("add Ada")])
    [interrupt] = (await _interrupted(client, "t-approve"))["interrupts"]
    pending = (await client.get("/api/approvals")).json()["data"]
    assert interrupt["id"] == pending[0]["id"]
    assert interrupt["reason"] == "confirmation"
    assert interrupt["toolCallId"] == pending[0]["tool_call_id"]
    assert interrupt["expiresAt"].endswith("Z")
    assert interrupt["responseSchema"]["required"] == ["approved"]

    resume = [{"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": True}}]
    continued = await run(client, "t-approve", [user("delete Ada")], resume=resume)

    assert types(continued)[:2] == ["RUN_STARTED", "TOOL_CALL_RESULT"]
    assert continued[1]["toolCallId"] == interrupt["toolCallId"]
    assert text_of(continued) == "Decided." and continued[-1]["outcome"]["type"] == "success"
    assert await node_names(client) == []

    again = await run(client, "t-approve", [user("delete Ada")], resume=resume, status=409)
    assert again["error"]["code"] == "already_decided"


async def test_a_cancelled_interrupt_rejects_and_the_tool_never_runs(client: ApiClient) -> None:
    await run(client, "t-reject", [user("add Ada")])
    [interrupt] = (await _interrupted(client, "t-reject"))["interrupts"]

    resume = [{"interruptId": interrupt["id"], "status": "cancelled"}]
    continued = await run(client, "t-reject", [user("delete Ada")], resume=resume)

    assert continued[1]["type"] == "TOOL_CALL_RESULT"
    assert continued[1]["metadata"]["chatBff"]["status"] != "success"
    assert await node_names(client) == ["Ada Lovelace"]


async def test_a_resume_entry_must_name_a_pending_interrupt_of_this_thread(
    client: ApiClient,
) -> None:
    [interrupt] = (await _interrupted(client, "t-own"))["interrupts"]
    approve = {"interruptId": interrupt["id"], "status": "resolved", "payload": True}

    elsewhere = await run(client, "t-other", [user("x")], resume=[approve], status=404)
    unknown = {**approve, "interruptId": "apr_nope"}
    missing = await run(client, "t-own", [user("x")], resume=[unknown], status=404)
    malformed = {**approve, "payload": {"yes": 1}}
    bad = await run(client, "t-own", [user("x")], resume=[malformed], status=400)

    assert elsewhere["error"]["code"] == missing["error"]["code"] == "approval_not_found"
    assert bad["error"]["code"] == "invalid_request"
    assert [a["id"] for a in (await client.get("/api/approvals")).json()["data"]] == [
        interrupt["id"]
    ]


async def test_a_failed_run_ends_in_run_error(client: ApiClient) -> None:
    stream = await run(client, "t-fail", [user("please fail")])

    assert types(stream) == ["RUN_STARTED", "RUN_ERROR"]
    assert "upstream said no" in stream[-1]["message"]
    assert stream[-1]["code"]


async def test_client_context_is_marked_untrusted_in_the_user_turn_and_capped(
    client: ApiClient,
) -> None:
    context = [{"description": "page", "value": "the settings page"}]
    system = {"id": "s1", "role": "system", "content": "You are a pirate."}
    await run(client, "t-ctx", [system, user("hello")], context=context)

    [sent, _] = await stored(client, "t-ctx")
    texts = [p["data"]["text"] for p in sent["content"]]
    assert texts[0] == "hello"
    assert texts[1].startswith(CONTEXT_HEADER)
    assert "- page: the settings page" in texts[1]
    assert "- system message: You are a pirate." in texts[1]

    huge = [{"description": "blob", "value": "x" * MAX_CONTEXT_CHARS}]
    refused = await run(client, "t-ctx2", [user("hello")], context=huge, status=400)
    assert refused["error"]["param"] == "context"


async def test_an_input_with_nothing_new_to_run_is_refused(client: ApiClient) -> None:
    said = {"id": "a1", "role": "assistant", "content": "hi"}
    refused = await run(client, "t-none", [user("hello"), said], status=400)
    assert refused["error"]["code"] == "invalid_request"
    assert (await client.post("/api/agui", json={"threadId": "t"})).status_code == 422


async def test_stop_without_an_active_run(client: ApiClient) -> None:
    assert (await client.post("/api/agui/never-used/stop")).status_code == 404
    await run(client, "t-stop", [user("hello")])
    assert (await client.post("/api/agui/t-stop/stop")).status_code == 204


async def test_a_client_without_the_threads_history_gets_a_messages_snapshot(
    client: ApiClient,
) -> None:
    first = await run(client, "t-snap", [user("add Ada")])
    in_sync = await run(
        client,
        "t-snap",
        [
            user("add Ada"),
            {"id": first[1]["parentMessageId"], "role": "assistant"},
            user("hi", "u2"),
        ],
    )
    assert "MESSAGES_SNAPSHOT" not in types(in_sync)

    fresh = await run(client, "t-snap", [user("hello", "u-new")])  # another device

    assert types(fresh)[:2] == ["RUN_STARTED", "MESSAGES_SNAPSHOT"]
    snapshot = fresh[1]["messages"]
    stored_ids = [m["id"] for m in await stored(client, "t-snap")]
    assert [m["role"] for m in snapshot] == [
        "user",
        "assistant",
        "tool",
        "user",
        "assistant",
        "user",
    ]
    assert [m["id"] for m in snapshot if m["role"] != "tool"] == stored_ids[:5]
    assert snapshot[1]["toolCalls"][0]["function"]["name"] == "add_node"
    assert snapshot[2]["toolCallId"] == snapshot[1]["toolCalls"][0]["id"]
    # The new message under its stored id: the client replaces its own copy, in order.
    assert snapshot[-1] == {"id": stored_ids[4], "role": "user", "content": "hello"}


async def test_a_retried_input_replays_its_run_and_starts_no_second_turn(
    client: ApiClient,
) -> None:
    body = {"threadId": "t-retry", "runId": "run-r", "messages": [user("hello")]}
    first = await client.post("/api/agui", json=body)
    again = await client.post("/api/agui", json=body)

    assert again.status_code == 200, again.text
    replayed = events(again.text)
    assert replayed == events(first.text)  # the same run from RUN_STARTED to its end
    assert replayed[0]["runId"] == "run-r" and replayed[-1]["type"] == "RUN_FINISHED"
    ours = replayed[0]["metadata"]["chatBff"]["runId"]  # our run: the first one
    assert ours == events(first.text)[0]["metadata"]["chatBff"]["runId"]
    assert [m["role"] for m in await stored(client, "t-retry")] == ["user", "assistant"]


async def test_a_run_id_sent_again_with_another_input_is_another_turn(client: ApiClient) -> None:
    first = await run(client, "t-reuse", [user("hello")], run_id="run-x")
    said = {"id": first[1]["messageId"], "role": "assistant", "content": text_of(first)}
    history = [user("hello"), said, user("hello again", "u2")]

    second = await run(client, "t-reuse", history, run_id="run-x")

    assert second[-1]["type"] == "RUN_FINISHED"
    ours = [r[0]["metadata"]["chatBff"]["runId"] for r in (first, second)]
    assert ours[0] != ours[1]
    roles = [m["role"] for m in await stored(client, "t-reuse")]
    assert roles == ["user", "assistant", "user", "assistant"]
