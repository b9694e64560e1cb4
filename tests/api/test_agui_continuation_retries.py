"""AG-UI inputs that continue a thread are safe to retry like those that start a turn: the
same `resume` or tool results input sent again (same `threadId`, `runId` and input, say
after a dropped connection) replays the run it continued the thread with, as the first
answer streamed it, and decides nothing, stores nothing and starts nothing twice."""

from __future__ import annotations

import json
from typing import Any

from tests.api.test_agui import PICK, client, events, run, stored, user
from tests.api.test_approvals import node_names
from tests.fakes.db import ApiClient

__all__ = ["client"]  # the fixture: the example graph tools and a scripted model


async def twice(client: ApiClient, body: dict[str, Any]) -> tuple[list[Any], list[Any]]:
    first = await client.post("/api/agui", json=body)
    assert first.status_code == 200, first.text
    again = await client.post("/api/agui", json=body)
    assert again.status_code == 200, again.text
    return events(first.text), events(again.text)


def read(stream: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The events, a result's JSON read (Postgres keeps a stored result's keys in its own
    order: the same result, written otherwise)."""
    return [
        {**e, "content": json.loads(e["content"])} if e["type"] == "TOOL_CALL_RESULT" else e
        for e in stream
    ]


def our_run(stream: list[dict[str, Any]]) -> str:
    ours: str = stream[0]["metadata"]["chatBff"]["runId"]
    return ours


async def test_a_retried_resume_replays_its_run_and_decides_nothing_again(
    client: ApiClient,
) -> None:
    await run(client, "t-resume", [user("add Ada")])
    asked = await run(client, "t-resume", [user("delete Ada")])
    [interrupt] = asked[-1]["outcome"]["interrupts"]
    resume = [{"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": True}}]
    body = {"threadId": "t-resume", "runId": "run-go", "messages": [user("delete Ada")]}

    first, again = await twice(client, {**body, "resume": resume})

    assert read(again) == read(
        first
    )  # RUN_STARTED, the decided call's result, the run, RUN_FINISHED
    assert again[1]["type"] == "TOOL_CALL_RESULT"
    assert again[1]["toolCallId"] == interrupt["toolCallId"]
    assert our_run(again) == our_run(first)
    assert await node_names(client) == []
    roles = [m["role"] for m in await stored(client, "t-resume")]
    assert roles == ["user", "assistant", "user", "assistant", "assistant"]
    other = await run(client, "t-resume", [user("delete Ada")], resume=resume, status=409)
    assert other["error"]["code"] == "already_decided"  # another runId: as before


async def test_retried_tool_results_replay_their_run_and_are_stored_once(
    client: ApiClient,
) -> None:
    asked = await run(client, "t-results", [user("pick a color")], tools=[PICK])
    start = next(e for e in asked if e["type"] == "TOOL_CALL_START")
    call = {
        "id": start["toolCallId"],
        "type": "function",
        "function": {"name": "pick_color", "arguments": '{"hint":"warm"}'},
    }
    history = [
        user("pick a color"),
        {"id": start["parentMessageId"], "role": "assistant", "toolCalls": [call]},
        {"id": "tm1", "role": "tool", "toolCallId": start["toolCallId"], "content": '"red"'},
    ]
    body = {"threadId": "t-results", "runId": "run-red", "messages": history, "tools": [PICK]}

    first, again = await twice(client, body)

    assert read(again) == read(first)
    assert our_run(again) == our_run(first)
    assert again[-1]["outcome"] == {"type": "success"}
    roles = [m["role"] for m in await stored(client, "t-results")]
    assert roles == ["user", "assistant", "assistant"]
