"""`GET /v1/responses/{id}` through the official openai SDK, in process, on SQLite and
Postgres: a conversation's response is retrieved as it stands, its stream replayed from
the start or resumed after `starting_after` with the live stream's own frames; stateless,
unknown and other users' responses are 404 `response_not_found`."""

from __future__ import annotations

from typing import Any

import openai
import pytest

from app.providers.scripted import Script, ScriptedProvider, ScriptedToolCall, ScriptedTurn
from tests.fakes.db import ApiClient

SCRIPT = Script(
    mode="rules",
    turns=[
        ScriptedTurn(match="^hello", thinking="A greeting.", text="Hello from chat-bff."),
        ScriptedTurn(
            match="^find",
            tool_calls=[ScriptedToolCall(id="call_find", name="find_nodes", args={"query": "x"})],
        ),
        ScriptedTurn(after_tool="find_nodes", text="Nothing matches x."),
    ],
)


@pytest.fixture(autouse=True)
def _script(users_api: ApiClient) -> None:
    users_api.services.providers["scripted"] = ScriptedProvider(SCRIPT, delay_ms=0)


def _comparable(event: Any) -> dict[str, Any]:
    """An event as JSON, without the Response's `created_at` (the live stream stamps its
    own clock; a replay reads the run's start)."""
    data: dict[str, Any] = event.model_dump(mode="json", exclude_none=True)
    response = data.get("response")
    if isinstance(response, dict):
        response.pop("created_at", None)
    return data


async def _turn(client: openai.AsyncOpenAI, text: str) -> list[Any]:
    conversation = await client.conversations.create()
    stream = await client.responses.create(
        model="scripted", input=text, conversation=conversation.id, stream=True
    )
    return [e async for e in stream]


async def test_a_conversation_response_is_retrieved_as_it_ended(
    me: openai.AsyncOpenAI,
) -> None:
    live = await _turn(me, "find x")
    final = live[-1].response

    got = await me.responses.retrieve(final.id)

    assert got.id == final.id
    assert got.status == "completed"
    assert got.conversation is not None
    assert got.conversation.id == final.conversation.id
    assert [i.model_dump() for i in got.output] == [i.model_dump() for i in final.output]
    assert got.output_text == "Nothing matches x."
    assert got.usage is not None and got.usage.total_tokens > 0


async def test_the_stream_replays_from_the_start_with_the_live_frames(
    me: openai.AsyncOpenAI,
) -> None:
    live = await _turn(me, "hello")
    response_id = live[-1].response.id

    replay = [e async for e in await me.responses.retrieve(response_id, stream=True)]

    assert [_comparable(e) for e in replay] == [_comparable(e) for e in live]
    assert [e.sequence_number for e in replay] == list(range(len(live)))


async def test_starting_after_resumes_exactly_after_that_event(me: openai.AsyncOpenAI) -> None:
    live = await _turn(me, "find x")
    response_id = live[-1].response.id
    cut = len(live) // 2

    rest = [
        e
        async for e in await me.responses.retrieve(
            response_id, stream=True, starting_after=live[cut].sequence_number
        )
    ]

    assert [_comparable(e) for e in rest] == [_comparable(e) for e in live[cut + 1 :]]
    assert rest[0].sequence_number == live[cut].sequence_number + 1
    assert rest[-1].type == "response.completed"
    past_the_end = await me.responses.retrieve(
        response_id, stream=True, starting_after=live[-1].sequence_number
    )
    assert [e async for e in past_the_end] == []


async def test_unknown_stateless_and_other_users_responses_are_404(
    me: openai.AsyncOpenAI, other: openai.AsyncOpenAI
) -> None:
    mine = (await _turn(me, "hello"))[-1].response.id
    stateless = await me.responses.create(model="scripted", input="hello")

    for client, response_id in (
        (other, mine),
        (me, stateless.id),
        (me, "resp_0123456789abcdef0123456789abcdef"),
        (me, "not-a-response-id"),
    ):
        for stream in (False, True):
            retrieve = client.responses.retrieve(response_id, stream=stream)
            with pytest.raises(openai.NotFoundError) as caught:
                await retrieve
            body: Any = caught.value.body
            assert body["code"] == "response_not_found", body
    assert "conversation" in str(caught.value)


async def test_a_decided_approval_retrieves_with_the_finished_call(
    users_api: ApiClient, me: openai.AsyncOpenAI
) -> None:
    add = ScriptedToolCall(name="add_node", id="call_add", args={"label": "P", "name": "Ada"})
    delete = ScriptedToolCall(name="delete_node", id="call_del", args={"id": "Ada"})
    turns = [ScriptedTurn(tool_calls=[add]), ScriptedTurn(tool_calls=[delete])]
    users_api.services.providers["scripted"] = ScriptedProvider(
        Script(mode="sequence", turns=[*turns, ScriptedTurn(text="Ok.")]), delay_ms=0
    )
    conversation = await me.conversations.create()
    paused = await me.responses.create(
        model="scripted", input="delete Ada", conversation=conversation.id
    )
    ask = paused.output[-1]
    assert ask.type == "mcp_approval_request"
    # The conversation's items agree with the stream: the paused call is only the request.
    waiting = (await me.conversations.items.list(conversation.id, order="asc")).data
    assert [(i.type, i.id) for i in waiting if i.type.startswith("mcp")] == [
        ("mcp_call", "call_add"),
        ("mcp_approval_request", ask.id),
    ]
    answer: Any = [
        {"type": "mcp_approval_response", "approval_request_id": ask.id, "approve": True}
    ]
    decided = await me.responses.create(
        model="scripted", input=answer, conversation=conversation.id
    )

    got = await me.responses.retrieve(decided.id)
    before = await me.responses.retrieve(paused.id)

    call = got.output[0]
    assert call.type == "mcp_call"
    assert (call.id, call.status) == ("call_del", "completed")
    assert got.output_text == "Ok."
    # The paused response stays what it was: the approval asked, no call announced.
    assert [i.type for i in before.output] == ["mcp_call", "mcp_approval_request"]
    # Reloaded, the conversation shows the call finished, not waiting.
    items = (await me.conversations.items.list(conversation.id, order="asc")).data
    calls = [i for i in items if i.type.startswith("mcp")]
    assert [(i.type, i.id, getattr(i, "status", None)) for i in calls] == [
        ("mcp_call", "call_add", "completed"),
        ("mcp_call", "call_del", "completed"),
    ]


async def test_a_running_response_is_retrieved_in_progress_then_ended(
    users_api: ApiClient, me: openai.AsyncOpenAI
) -> None:
    """Any run of a conversation is a stored response, here one started natively."""
    users_api.services.providers["scripted"] = ScriptedProvider(
        Script(mode="sequence", turns=[ScriptedTurn(stall_seconds=3.0, text="Late but here.")]),
        delay_ms=0,
    )
    conversation = await me.conversations.create()
    headers = {"Authorization": f"Bearer {me.api_key}"}
    started = await users_api.post(
        f"/api/conversations/{conversation.id}/messages",
        json={"content": "take your time"},
        headers=headers,
    )
    assert started.status_code == 202, started.text
    response_id = "resp_" + started.json()["run_id"].removeprefix("run_")

    running = await me.responses.retrieve(response_id)
    await users_api.get(started.json()["events_url"], headers=headers)  # to the run's end
    ended = await me.responses.retrieve(response_id)

    assert (running.status, running.output) == ("in_progress", [])
    assert ended.status == "completed"
    assert ended.output_text == "Late but here."
