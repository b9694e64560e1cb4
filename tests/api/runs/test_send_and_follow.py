"""Sending a message starts a run; its events replay and resume exactly; the conversation
stores both messages."""

from __future__ import annotations

from typing import Any

import pytest

from app.providers.scripted import ScriptedToolCall, ScriptedTurn
from tests.api.runs.helpers import (
    CONVERSATIONS,
    WEATHER,
    conversation,
    create,
    events,
    finished,
    play,
    send,
    text_of,
    tools_of,
)
from tests.api.sse_frames import parse
from tests.fakes.db import ApiClient


async def test_a_sent_message_starts_a_run_with_an_events_url(client: ApiClient) -> None:
    play(client, ScriptedTurn(text="Hello."))
    cid = await create(client)

    started = await send(client, cid)

    assert started["run_id"].startswith("run_")
    assert started["events_url"] == f"{CONVERSATIONS}/{cid}/runs/{started['run_id']}/events"
    await finished(client, started)


async def test_the_events_replay_every_event_and_close_after_run_end(client: ApiClient) -> None:
    play(client, ScriptedTurn(text="A fairly short answer."))
    cid = await create(client)
    started = await send(client, cid)

    frames = await events(client, started["events_url"])

    assert [f.id for f in frames] == list(range(1, len(frames) + 1))
    assert frames[0].event == "run_start"
    assert frames[-1].event == "run_end"
    assert frames[-1].data["status"] == "completed"
    text = "".join(f.data["delta"] for f in frames if f.event == "text_delta")
    assert text == "A fairly short answer."
    assert all(f.data["run_id"] == started["run_id"] for f in frames)


@pytest.mark.parametrize("how", ["header", "query"])
async def test_resuming_after_n_gives_exactly_the_later_events(client: ApiClient, how: str) -> None:
    play(client, ScriptedTurn(text="one two three four five six"))
    cid = await create(client)
    started = await send(client, cid)
    full = await events(client, started["events_url"])
    cut = len(full) // 2

    if how == "header":
        rest = await events(client, started["events_url"], **{"Last-Event-ID": str(cut)})
    else:
        rest = await events(client, f"{started['events_url']}?after={cut}")

    assert rest == full[cut:]


async def test_the_stored_conversation_holds_the_user_and_assistant_messages(
    client: ApiClient,
) -> None:
    play(
        client,
        ScriptedTurn(
            text="Let me check.",
            tool_calls=[ScriptedToolCall(name="get_weather", args={"city": "Oslo"}, id="c1")],
        ),
    )
    cid = await create(client)
    await finished(client, await send(client, cid, "Weather in Oslo?", tools=[WEATHER]))

    messages = (await conversation(client, cid))["messages"]

    assert [m["role"] for m in messages] == ["user", "assistant"]
    assert messages[0]["content"] in (
        "Weather in Oslo?",
        [{"type": "text", "data": {"text": "Weather in Oslo?"}}],
    )
    answer = messages[1]["content"]
    assert answer[0]["type"] == "text"
    assert answer[0]["data"]["text"] == "Let me check."
    [tool] = tools_of(messages[1])
    assert tool["id"] == "c1"
    assert tool["data"]["args"] == {"city": "Oslo"}
    assert tool["data"]["status"] == "waitingSubmission"


async def test_the_conversations_system_prompt_opens_what_the_model_sees(
    client: ApiClient,
) -> None:
    model = play(client, ScriptedTurn(text="Ahoy."))
    cid = await create(client, system_prompt="Answer like a pirate.")

    await finished(client, await send(client, cid, "Hi"))

    [request] = model.requests
    assert request.messages[0].role == "system"
    assert request.messages[0].content == "Answer like a pirate."
    assert request.messages[-1].text() == "Hi"


async def test_a_resumable_stream_asks_eventsource_to_come_back_within_a_second(
    client: ApiClient,
) -> None:
    play(client, ScriptedTurn(text="Hello there"))
    cid = await create(client)
    started = await send(client, cid)

    response = await client.get(started["events_url"])

    first_block = response.text.split("\n\n")[0].split("\n")
    assert first_block[0] == "retry: 1000"
    assert first_block[1:3] == ["id: 1", "event: run_start"]


async def test_a_send_asking_for_sse_streams_the_whole_run(client: ApiClient) -> None:
    play(client, ScriptedTurn(text="Streamed right away."))
    cid = await create(client)

    response = await client.post(
        f"{CONVERSATIONS}/{cid}/messages",
        json={"content": "Hi"},
        headers={"Accept": "text/event-stream"},
    )

    assert response.status_code == 200
    frames = parse(response.text)
    assert [f.id for f in frames] == list(range(1, len(frames) + 1))
    assert frames[-1].data["status"] == "completed"
    assert "".join(f.data["delta"] for f in frames if f.event == "text_delta") == (
        "Streamed right away."
    )


async def test_an_over_long_message_is_cut_and_the_answer_says_so(client: ApiClient) -> None:
    play(client, ScriptedTurn(text="That was long."))
    cid = await create(client)
    text = "A sentence that repeats. " * 6000  # 150,000 characters

    started = await send(client, cid, text)

    assert started["truncated_input"] is True
    frames = await finished(client, started)
    assert frames[0].data["context"]["truncated_input"] is True
    [question] = [m for m in (await conversation(client, cid))["messages"] if m["role"] == "user"]
    stored = text_of(question)
    assert stored.endswith("[...truncated]")
    assert len(stored) <= 100_000 + len("\n\n[...truncated]")


async def test_a_message_sent_as_typed_parts_is_stored_as_parts(client: ApiClient) -> None:
    provider = play(client, ScriptedTurn(text="Got it."))
    cid = await create(client)
    parts = [
        {"type": "text", "data": {"text": "Look at this"}},
        {"type": "file", "data": {"id": "f1", "name": "plan.pdf", "mimeType": "application/pdf"}},
    ]

    await finished(client, await send(client, cid, parts))

    [question] = [m for m in (await conversation(client, cid))["messages"] if m["role"] == "user"]
    assert [p["type"] for p in question["content"]] == ["text", "file"]
    assert question["content"][1]["data"]["name"] == "plan.pdf"
    assert provider.requests[0].messages[-1].text() == "Look at this"


@pytest.mark.parametrize(
    "content",
    ["", "   \n\t ", [{"type": "text", "data": {"text": "  "}}], []],
    ids=["empty", "whitespace", "blank-part", "no-parts"],
)
async def test_a_message_with_nothing_to_say_is_refused_before_any_run(
    client: ApiClient, content: Any
) -> None:
    cid = await create(client)

    response = await client.post(f"{CONVERSATIONS}/{cid}/messages", json={"content": content})

    assert response.status_code == 422
    assert response.json()["error"]["param"] == "content"
    assert (await conversation(client, cid))["messages"] == []
