"""Conversation runs over HTTP, on SQLite and Postgres: send, follow, resume, cancel,
client tool results, regenerate and edit."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from pydantic import SecretStr

from app.domain.events import RunStart, SequencedEvent, TextDeltaEvent, ToolEnd, ToolStart
from app.domain.identity import Caller
from app.domain.messages import Message
from app.domain.parts import ToolPart
from app.providers.scripted import Script, ScriptedProvider, ScriptedToolCall, ScriptedTurn
from app.runs.journal import RunJournal
from app.runs.requests import TurnInput
from app.settings import Settings
from app.store.repos import ConversationRepo, MessageRepo
from app.translate.openai_chat.read import tools_from_openai
from tests.api.sse_frames import Frame, parse
from tests.fakes.anthropic_upstream import (
    AnthropicUpstream,
    MessageSpec,
    Text,
    ToolUse,
    spec_frames,
)
from tests.fakes.db import ApiClient, MakeApi
from tests.fakes.openai_upstream import Completion, FakeOpenAIUpstream
from tests.fakes.openai_upstream import ToolCall as OpenAIToolCall

CONVERSATIONS = "/api/conversations"
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather for a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}


def play(client: ApiClient, *turns: ScriptedTurn, delay_ms: float = 0) -> ScriptedProvider:
    """Script the next model calls: a fresh sequence provider behind the `scripted` model."""
    provider = ScriptedProvider(Script(mode="sequence", turns=list(turns)), delay_ms=delay_ms)
    client.services.providers["scripted"] = provider
    return provider


@pytest.fixture
async def client(make_api: MakeApi, app_settings: Settings) -> AsyncIterator[ApiClient]:
    async with make_api(
        app_settings, providers={"scripted": ScriptedProvider(Script(mode="sequence", turns=[]))}
    ) as api:
        yield api


async def create(client: ApiClient, **body: Any) -> str:
    response = await client.post(CONVERSATIONS, json=body)
    assert response.status_code == 201, response.text
    conversation_id: str = response.json()["id"]
    return conversation_id


async def send(client: ApiClient, cid: str, content: Any = "Hi", **body: Any) -> dict[str, Any]:
    response = await client.post(
        f"{CONVERSATIONS}/{cid}/messages", json={"content": content, **body}
    )
    assert response.status_code == 202, response.text
    started: dict[str, Any] = response.json()
    return started


async def events(client: ApiClient, url: str, **headers: str) -> list[Frame]:
    response = await client.get(url, headers=headers)
    assert response.status_code == 200, response.text
    return parse(response.text)


async def conversation(client: ApiClient, cid: str) -> dict[str, Any]:
    response = await client.get(f"{CONVERSATIONS}/{cid}")
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def until(client: ApiClient, cid: str, run_id: str, event_type: str) -> None:
    """Wait (live, in process) until the run has emitted an event of `event_type`."""
    owner = client.services.settings.local_user_id

    async def watch() -> None:
        async for batch in client.services.runs.follow(owner, run_id, conversation_id=cid):
            if any(item.event.type == event_type for item in batch):
                return
        raise AssertionError(f"the run ended without a {event_type} event")

    await asyncio.wait_for(watch(), timeout=5)


async def finished(client: ApiClient, started: dict[str, Any]) -> list[Frame]:
    frames = await events(client, started["events_url"])
    assert frames[-1].event == "run_end"
    return frames


def tools_of(message: dict[str, Any]) -> list[dict[str, Any]]:
    return [p for p in message["content"] if p["type"] == "tool"]


# -- send and follow ----------------------------------------------------------------------


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
        [{"type": "text", "id": None, "data": {"text": "Weather in Oslo?"}}],
    )
    answer = messages[1]["content"]
    assert answer[0]["type"] == "text"
    assert answer[0]["data"]["text"] == "Let me check."
    [tool] = tools_of(messages[1])
    assert tool["id"] == "c1"
    assert tool["data"]["args"] == {"city": "Oslo"}
    assert tool["data"]["status"] == "waitingConfirmation"


# -- one run at a time --------------------------------------------------------------------


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


async def test_a_second_send_while_a_run_is_active_is_409_with_its_id(client: ApiClient) -> None:
    play(client, ScriptedTurn(text="slow", stall_seconds=30))
    cid = await create(client)
    started = await send(client, cid)

    response = await client.post(f"{CONVERSATIONS}/{cid}/messages", json={"content": "again"})

    assert response.status_code == 409
    assert response.json()["error"]["active_run_id"] == started["run_id"]
    await client.post(f"{CONVERSATIONS}/{cid}/runs/{started['run_id']}/cancel")


async def test_the_conversation_shows_its_active_run(client: ApiClient) -> None:
    play(client, ScriptedTurn(text="slow", stall_seconds=30))
    cid = await create(client)
    started = await send(client, cid)

    during = await conversation(client, cid)
    await client.post(f"{CONVERSATIONS}/{cid}/runs/{started['run_id']}/cancel")
    after = await conversation(client, cid)

    assert during["active_run_id"] == started["run_id"]
    assert after["active_run_id"] is None


# -- cancel -------------------------------------------------------------------------------


async def test_cancel_keeps_the_partial_text_marked_incomplete(client: ApiClient) -> None:
    play(client, ScriptedTurn(text="First words then a great deal more", delay_ms=500))
    cid = await create(client)
    started = await send(client, cid)
    await until(client, cid, started["run_id"], "text_delta")

    response = await client.post(f"{CONVERSATIONS}/{cid}/runs/{started['run_id']}/cancel")

    assert response.status_code == 200
    assert response.json()["status"] == "cancelled"
    frames = await finished(client, started)
    assert frames[-1].data["status"] == "cancelled"
    streamed = "".join(f.data["delta"] for f in frames if f.event == "text_delta")
    [answer] = [
        m for m in (await conversation(client, cid))["messages"] if m["role"] == "assistant"
    ]
    assert answer["metadata"]["status"] == "incomplete"
    assert answer["content"][0]["data"]["text"] == streamed
    assert streamed.startswith("First")


async def test_cancel_closes_a_tool_call_in_flight_as_cancelled(client: ApiClient) -> None:
    play(
        client,
        ScriptedTurn(
            text="Checking.",
            tool_calls=[ScriptedToolCall(name="get_weather", args={"city": "Oslo"}, id="c1")],
            delay_ms=500,
        ),
    )
    cid = await create(client)
    started = await send(client, cid, tools=[WEATHER])
    await until(client, cid, started["run_id"], "tool_args_delta")

    await client.post(f"{CONVERSATIONS}/{cid}/runs/{started['run_id']}/cancel")

    frames = await finished(client, started)
    [end] = [f for f in frames if f.event == "message_end"]
    [tool] = tools_of(end.data["message"])
    assert tool["data"]["status"] == "cancelled"
    [stored] = [
        m for m in (await conversation(client, cid))["messages"] if m["role"] == "assistant"
    ]
    assert tools_of(stored)[0]["data"]["status"] == "cancelled"


async def test_cancelling_twice_is_harmless(client: ApiClient) -> None:
    play(client, ScriptedTurn(text="slow", stall_seconds=30))
    cid = await create(client)
    started = await send(client, cid)
    url = f"{CONVERSATIONS}/{cid}/runs/{started['run_id']}/cancel"

    first = await client.post(url)
    second = await client.post(url)

    assert (first.status_code, second.status_code) == (200, 200)
    assert second.json()["status"] == "cancelled"
    frames = await finished(client, started)
    assert [f.event for f in frames].count("run_end") == 1


async def test_cancel_after_the_run_finished_changes_nothing(client: ApiClient) -> None:
    play(client, ScriptedTurn(text="Done already."))
    cid = await create(client)
    started = await send(client, cid)
    before = await finished(client, started)

    response = await client.post(f"{CONVERSATIONS}/{cid}/runs/{started['run_id']}/cancel")

    assert response.status_code == 200
    assert response.json()["status"] == "completed"
    assert await events(client, started["events_url"]) == before
    [answer] = [
        m for m in (await conversation(client, cid))["messages"] if m["role"] == "assistant"
    ]
    assert answer["metadata"].get("status") != "incomplete"


# -- client tools -------------------------------------------------------------------------


async def test_a_client_tool_round_trip_continues_with_the_result_and_the_tools(
    client: ApiClient,
) -> None:
    provider = play(
        client,
        ScriptedTurn(
            tool_calls=[ScriptedToolCall(name="get_weather", args={"city": "Oslo"}, id="c1")]
        ),
        ScriptedTurn(text="Sunny in Oslo."),
    )
    cid = await create(client)
    first = await finished(client, await send(client, cid, "Weather?", tools=[WEATHER]))
    assert first[-1].data["status"] == "requires_action"

    response = await client.post(
        f"{CONVERSATIONS}/{cid}/tool-results",
        json={"results": [{"toolCallId": "c1", "status": "success", "result": {"sky": "sunny"}}]},
    )

    assert response.status_code == 200, response.text
    out = response.json()
    assert out["waiting"] is False
    second = await events(client, out["events_url"])
    assert second[-1].data["status"] == "completed"
    request = provider.requests[1]
    assert [t.name for t in request.tools] == ["get_weather"]
    [part] = [p for m in request.messages for p in m.parts() if isinstance(p, ToolPart)]
    assert (part.id, part.data.status, part.data.result) == ("c1", "success", {"sky": "sunny"})
    messages = (await conversation(client, cid))["messages"]
    assert messages[-1]["content"][0]["data"]["text"] == "Sunny in Oslo."
    provider.assert_all_used()


async def test_a_result_for_an_unknown_tool_call_is_404(client: ApiClient) -> None:
    play(client, ScriptedTurn(tool_calls=[ScriptedToolCall(name="get_weather", id="c1")]))
    cid = await create(client)
    await finished(client, await send(client, cid, tools=[WEATHER]))

    response = await client.post(
        f"{CONVERSATIONS}/{cid}/tool-results",
        json={"results": [{"toolCallId": "nope", "status": "success", "result": 1}]},
    )

    assert response.status_code == 404
    assert response.json()["error"]["code"] == "tool_call_not_found"


async def test_a_result_for_an_answered_tool_call_is_409(client: ApiClient) -> None:
    play(
        client,
        ScriptedTurn(
            tool_calls=[
                ScriptedToolCall(name="get_weather", args={"city": "Oslo"}, id="c1"),
                ScriptedToolCall(name="get_weather", args={"city": "Rome"}, id="c2"),
            ]
        ),
    )
    cid = await create(client)
    await finished(client, await send(client, cid, tools=[WEATHER]))
    body = {"results": [{"toolCallId": "c1", "status": "success", "result": "sunny"}]}
    first = await client.post(f"{CONVERSATIONS}/{cid}/tool-results", json=body)
    assert first.json()["waiting"] is True

    again = await client.post(f"{CONVERSATIONS}/{cid}/tool-results", json=body)

    assert again.status_code == 409
    assert again.json()["error"]["code"] == "tool_call_already_answered"


async def test_cancelling_a_run_that_waits_for_the_browser_closes_its_tool_calls(
    client: ApiClient,
) -> None:
    play(
        client,
        ScriptedTurn(tool_calls=[ScriptedToolCall(name="get_weather", args={}, id="c1")]),
        ScriptedTurn(text="Fine, something else."),
    )
    cid = await create(client)
    started = await send(client, cid, tools=[WEATHER])
    assert (await finished(client, started))[-1].data["status"] == "requires_action"

    stop = await client.post(f"{CONVERSATIONS}/{cid}/runs/{started['run_id']}/cancel")

    assert stop.json()["status"] == "requires_action"
    [part] = tools_of((await conversation(client, cid))["messages"][-1])
    assert part["data"]["status"] == "cancelled"
    late = {"results": [{"toolCallId": "c1", "status": "success", "result": "sunny"}]}
    assert (await client.post(f"{CONVERSATIONS}/{cid}/tool-results", json=late)).status_code == 409
    nxt = await finished(client, await send(client, cid, "Never mind."))
    assert nxt[-1].data["status"] == "completed"


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


async def test_purging_a_conversation_mid_run_stops_the_run_first(client: ApiClient) -> None:
    play(client, ScriptedTurn(text="a long answer " * 50), delay_ms=20)
    cid = await create(client)
    started = await send(client, cid)
    await until(client, cid, started["run_id"], "text_delta")

    purged = await client.delete(f"{CONVERSATIONS}/{cid}", params={"purge": "true"})

    assert purged.status_code == 204
    run = client.services.runs.manager.local(started["run_id"])
    assert run is not None
    assert run.status == "cancelled"
    assert (await client.get(f"{CONVERSATIONS}/{cid}")).status_code == 404


# -- regenerate and edit ------------------------------------------------------------------


async def test_regenerate_answers_again_and_keeps_the_old_answer_superseded(
    client: ApiClient,
) -> None:
    play(client, ScriptedTurn(text="First answer."), ScriptedTurn(text="Second answer."))
    cid = await create(client)
    await finished(client, await send(client, cid, "Question?"))

    response = await client.post(f"{CONVERSATIONS}/{cid}/regenerate", json={})

    assert response.status_code == 202, response.text
    await finished(client, response.json())
    messages = (await conversation(client, cid))["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant"]
    assert messages[1]["content"][0]["data"]["text"] == "Second answer."
    owner = client.services.settings.local_user_id
    async with client.services.sessions() as session:
        records = await MessageRepo(session).records(owner, cid, include_superseded=True)
    old = [r for r in records if r.superseded_at is not None]
    assert [r.message.text() for r in old] == ["First answer."]


async def test_editing_the_last_user_message_reruns_it(client: ApiClient) -> None:
    provider = play(client, ScriptedTurn(text="About cats."), ScriptedTurn(text="About dogs."))
    cid = await create(client)
    await finished(client, await send(client, cid, "Tell me about cats"))
    [question] = [m for m in (await conversation(client, cid))["messages"] if m["role"] == "user"]

    response = await client.put(
        f"{CONVERSATIONS}/{cid}/messages/{question['id']}", json={"content": "Tell me about dogs"}
    )

    assert response.status_code == 202, response.text
    await finished(client, response.json())
    messages = (await conversation(client, cid))["messages"]
    assert [(m["role"], _text(m)) for m in messages] == [
        ("user", "Tell me about dogs"),
        ("assistant", "About dogs."),
    ]
    assert provider.requests[1].messages[-1].text() == "Tell me about dogs"


def _text(message: dict[str, Any]) -> str:
    content = message["content"]
    if isinstance(content, str):
        return content
    return "".join(p["data"]["text"] for p in content if p["type"] == "text")


# -- other users --------------------------------------------------------------------------


async def _foreign_run(client: ApiClient) -> tuple[str, str]:
    """A finished run in a conversation that belongs to someone else."""
    play(client, ScriptedTurn(tool_calls=[ScriptedToolCall(name="get_weather", id="c9")]))
    async with client.services.sessions.begin() as session:
        cid = (await ConversationRepo(session).create("someone-else", title="theirs")).id
    run = await client.services.runs.send(
        Caller(user_id="someone-else"),
        cid,
        "their secret",
        TurnInput(client_tools=tools_from_openai([WEATHER])),
    )
    await run.wait()
    return cid, run.run_id


async def test_sending_into_another_users_conversation_is_404(client: ApiClient) -> None:
    cid, _ = await _foreign_run(client)

    response = await client.post(f"{CONVERSATIONS}/{cid}/messages", json={"content": "hi"})

    assert response.status_code == 404


async def test_another_users_run_events_are_404(client: ApiClient) -> None:
    cid, run_id = await _foreign_run(client)

    response = await client.get(f"{CONVERSATIONS}/{cid}/runs/{run_id}/events")

    assert response.status_code == 404
    assert "their secret" not in response.text


async def test_cancelling_another_users_run_is_404(client: ApiClient) -> None:
    cid, run_id = await _foreign_run(client)

    response = await client.post(f"{CONVERSATIONS}/{cid}/runs/{run_id}/cancel")

    assert response.status_code == 404


async def test_tool_results_into_another_users_conversation_are_404(client: ApiClient) -> None:
    cid, _ = await _foreign_run(client)

    response = await client.post(
        f"{CONVERSATIONS}/{cid}/tool-results",
        json={"results": [{"toolCallId": "c9", "status": "success", "result": "x"}]},
    )

    assert response.status_code == 404


# -- answering a send ---------------------------------------------------------------------


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
    stored = _text(question)
    assert stored.endswith("[...truncated]")
    assert len(stored) <= 100_000 + len("\n\n[...truncated]")


# -- Anthropic behind a conversation ------------------------------------------------------

CLAUDE = json.dumps(
    [{"id": "claude-test", "provider": "anthropic", "upstream_model": "claude-haiku-4-5"}]
)


@pytest.fixture
async def claude(
    make_api: MakeApi, app_settings: Settings, anthropic_upstream: AnthropicUpstream
) -> AsyncIterator[ApiClient]:
    settings = app_settings.model_copy(
        update={
            "models_json": CLAUDE,
            "anthropic_api_key": SecretStr("sk-ant-test"),
            "anthropic_base_url": anthropic_upstream.base_url,
            "provider_max_retries": 0,
        }
    )
    async with make_api(settings) as api:
        yield api


async def test_a_client_tool_round_trip_through_anthropic(
    claude: ApiClient, anthropic_upstream: AnthropicUpstream
) -> None:
    anthropic_upstream.message(
        MessageSpec([Text("Checking."), ToolUse("get_weather", {"city": "Oslo"}, id="toolu_1")])
    )
    anthropic_upstream.message(MessageSpec([Text("Sunny in Oslo.")]))
    cid = await create(claude)
    first = await finished(claude, await send(claude, cid, "Weather?", tools=[WEATHER]))
    assert first[-1].data["status"] == "requires_action"

    response = await claude.post(
        f"{CONVERSATIONS}/{cid}/tool-results",
        json={"results": [{"toolCallId": "toolu_1", "status": "success", "result": "sunny"}]},
    )

    second = await events(claude, response.json()["events_url"])
    assert second[-1].data["status"] == "completed", second[-1].data
    request = anthropic_upstream.requests[1].json
    assert [t["name"] for t in request["tools"]] == ["get_weather"]
    results = [
        b for m in request["messages"] if isinstance(m["content"], list) for b in m["content"]
    ]
    assert any(b["type"] == "tool_result" and b["tool_use_id"] == "toolu_1" for b in results)
    anthropic_upstream.assert_all_used()


async def test_after_a_cancel_mid_tool_call_anthropic_accepts_the_next_turn(
    claude: ApiClient, anthropic_upstream: AnthropicUpstream
) -> None:
    spec = MessageSpec(
        [Text("Let me look."), ToolUse("get_weather", {"city": "Oslo"}, id="toolu_1")]
    )
    frames = spec_frames(spec)
    last_piece = max(i for i, f in enumerate(frames) if b"input_json_delta" in f)
    anthropic_upstream.message(spec, hold_after=last_piece)
    anthropic_upstream.message(MessageSpec([Text("Fine, never mind.")]))
    cid = await create(claude)
    started = await send(claude, cid, "Weather?", tools=[WEATHER])
    await until(claude, cid, started["run_id"], "tool_args_delta")
    await claude.post(f"{CONVERSATIONS}/{cid}/runs/{started['run_id']}/cancel")
    await finished(claude, started)

    again = await finished(claude, await send(claude, cid, "Forget it."))

    assert again[-1].data["status"] == "completed", again[-1].data
    assert len(anthropic_upstream.requests) == 2
    anthropic_upstream.assert_all_used()


# -- refusals -----------------------------------------------------------------------------


async def test_events_of_an_unknown_run_are_404(client: ApiClient) -> None:
    cid = await create(client)

    response = await client.get(f"{CONVERSATIONS}/{cid}/runs/run_nope/events")

    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


async def test_a_last_event_id_that_is_not_a_number_is_refused(client: ApiClient) -> None:
    play(client, ScriptedTurn(text="Hi."))
    cid = await create(client)
    started = await send(client, cid)
    await finished(client, started)

    response = await client.get(started["events_url"], headers={"Last-Event-ID": "abc"})

    assert response.status_code == 400
    assert response.json()["error"]["param"] == "Last-Event-ID"


async def test_regenerate_while_a_run_is_active_is_409(client: ApiClient) -> None:
    play(client, ScriptedTurn(text="slow", stall_seconds=30))
    cid = await create(client)
    started = await send(client, cid)

    response = await client.post(f"{CONVERSATIONS}/{cid}/regenerate", json={})

    assert response.status_code == 409
    assert response.json()["error"]["active_run_id"] == started["run_id"]
    await client.post(f"{CONVERSATIONS}/{cid}/runs/{started['run_id']}/cancel")


async def test_only_the_last_user_message_can_be_edited(client: ApiClient) -> None:
    play(client, ScriptedTurn(text="One."), ScriptedTurn(text="Two."))
    cid = await create(client)
    await finished(client, await send(client, cid, "first"))
    await finished(client, await send(client, cid, "second"))
    first = (await conversation(client, cid))["messages"][0]

    response = await client.put(
        f"{CONVERSATIONS}/{cid}/messages/{first['id']}", json={"content": "changed"}
    )

    assert response.status_code == 409
    assert response.json()["error"]["code"] == "not_last_message"
    assert len((await conversation(client, cid))["messages"]) == 4


async def test_concurrent_sends_start_exactly_one_run(client: ApiClient) -> None:
    play(client, ScriptedTurn(text="slow", stall_seconds=30))
    cid = await create(client)
    url = f"{CONVERSATIONS}/{cid}/messages"

    responses = await asyncio.gather(
        *(client.post(url, json={"content": f"message {i}"}) for i in range(5))
    )

    statuses = sorted(r.status_code for r in responses)
    assert statuses == [202, 409, 409, 409, 409], [r.text for r in responses]
    [winner] = [r.json()["run_id"] for r in responses if r.status_code == 202]
    assert {r.json()["error"]["active_run_id"] for r in responses if r.status_code == 409} == {
        winner
    }
    await client.post(f"{CONVERSATIONS}/{cid}/runs/{winner}/cancel")
    users = [m for m in (await conversation(client, cid))["messages"] if m["role"] == "user"]
    assert len(users) == 1


async def test_a_run_is_not_reachable_through_another_conversation(client: ApiClient) -> None:
    play(client, ScriptedTurn(text="Mine."))
    home = await create(client)
    other = await create(client)
    started = await send(client, home)
    await finished(client, started)

    events_elsewhere = await client.get(f"{CONVERSATIONS}/{other}/runs/{started['run_id']}/events")
    cancel_elsewhere = await client.post(f"{CONVERSATIONS}/{other}/runs/{started['run_id']}/cancel")

    assert (events_elsewhere.status_code, cancel_elsewhere.status_code) == (404, 404)


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


async def test_a_run_over_its_time_limit_fails_and_keeps_its_partial_text(
    make_api: MakeApi, app_settings: Settings
) -> None:
    slow = ScriptedProvider(
        Script(mode="sequence", turns=[ScriptedTurn(text="Some words and then more", delay_ms=200)])
    )
    settings = app_settings.model_copy(update={"run_timeout_seconds": 0.5})

    async with make_api(settings, providers={"scripted": slow}) as api:
        cid = await create(api)
        frames = await finished(api, await send(api, cid))
        answer = (await conversation(api, cid))["messages"][-1]

    assert frames[-1].data["status"] == "failed"
    assert frames[-1].data["error"]["code"] == "run_timeout"
    assert [f.event for f in frames if f.event == "error"] == ["error"]
    assert answer["metadata"]["status"] == "incomplete"
    assert answer["content"][0]["data"]["text"] == "".join(
        f.data["delta"] for f in frames if f.event == "text_delta"
    )


async def test_a_new_message_while_a_client_tool_waits_is_accepted_by_anthropic(
    claude: ApiClient, anthropic_upstream: AnthropicUpstream
) -> None:
    anthropic_upstream.message(
        MessageSpec([ToolUse("get_weather", {"city": "Oslo"}, id="toolu_1")])
    )
    anthropic_upstream.message(MessageSpec([Text("Sure, something else then.")]))
    cid = await create(claude)
    first = await finished(claude, await send(claude, cid, "Weather?", tools=[WEATHER]))
    assert first[-1].data["status"] == "requires_action"

    second = await finished(claude, await send(claude, cid, "Never mind, tell me a joke."))

    assert second[-1].data["status"] == "completed", second[-1].data
    anthropic_upstream.assert_all_used()


async def test_a_new_message_while_a_client_tool_waits_answers_the_call_for_openai(
    make_api: MakeApi, app_settings: Settings, openai_upstream: FakeOpenAIUpstream
) -> None:
    settings = app_settings.model_copy(
        update={
            "openai_api_key": SecretStr("sk-test"),
            "openai_base_url": openai_upstream.base_url,
            "provider_max_retries": 0,
        }
    )
    openai_upstream.enqueue(
        Completion(tool_calls=[OpenAIToolCall("get_weather", {"city": "Oslo"}, id="call_1")]),
        Completion(text="Sure, something else then."),
    )
    async with make_api(settings) as api:
        cid = await create(api)
        await finished(api, await send(api, cid, "Weather?", tools=[WEATHER]))
        await finished(api, await send(api, cid, "Never mind."))

    sent = openai_upstream.request_bodies()[1]["messages"]
    [asked] = [i for i, m in enumerate(sent) if m.get("tool_calls")]
    assert sent[asked + 1]["role"] == "tool"
    assert sent[asked + 1]["tool_call_id"] == "call_1"
    assert sent[-1] == {"role": "user", "content": "Never mind."}


# -- crash recovery -----------------------------------------------------------------------


async def _dead_run(client: ApiClient, cid: str, events: list[Any]) -> str:
    """Leave a run `running` with `events` stored, as a process killed mid-run would."""
    store = RunJournal(client.services.db, instance_id="a-process-since-killed")
    run_id, message_id = "run_dead", "msg_dead"
    await store.begin(
        owner_id=client.services.settings.local_user_id,
        conversation_id=cid,
        run_id=run_id,
        model_id="scripted",
        assistant_message_id=message_id,
        user_message=Message(role="user", content="Weather and advice?"),
    )
    sequenced = [SequencedEvent(seq=i + 1, event=e) for i, e in enumerate(events)]
    await store.append_events(run_id, sequenced)
    return run_id


async def test_a_run_a_dead_process_left_keeps_its_finished_tool_calls(
    make_api: MakeApi, app_settings: Settings, client: ApiClient
) -> None:
    cid = await create(client)
    ran = ToolPart.model_validate(
        {
            "id": "c1",
            "data": {
                "toolName": "get_weather",
                "toolCallId": "c1",
                "args": {"city": "Oslo"},
                "status": "success",
                "result": {"sky": "sunny"},
            },
        }
    )
    started = ran.model_copy(update={"data": ran.data.model_copy(update={"status": "loading"})})
    ids = {"run_id": "run_dead", "message_id": "msg_dead"}
    await _dead_run(
        client,
        cid,
        [
            RunStart(model="scripted", conversation_id=cid, **ids),
            TextDeltaEvent(delta="Let me check. ", **ids),
            ToolStart(part=started, **ids),
            ToolEnd(part=ran, **ids),
            TextDeltaEvent(delta="It is sunny", **ids),
        ],
    )

    # The dead process's lease lapses quickly here; the restarted instance closes its run.
    lapsing = app_settings.model_copy(update={"run_lease_seconds": 0.2})
    async with make_api(lapsing) as restarted:
        deadline = asyncio.get_running_loop().time() + 5
        while (detail := await conversation(restarted, cid))["active_run_id"] is not None:
            assert asyncio.get_running_loop().time() < deadline, "the dead run was never closed"
            await asyncio.sleep(0.05)
        answer = detail["messages"][-1]

    assert answer["metadata"]["status"] == "incomplete"
    assert [p["type"] for p in answer["content"]] == ["text", "tool", "text"]
    assert answer["content"][0]["data"]["text"] == "Let me check. "
    assert answer["content"][1]["data"]["status"] == "success"
    assert answer["content"][1]["data"]["result"] == {"sky": "sunny"}
    assert answer["content"][2]["data"]["text"] == "It is sunny"


async def test_a_second_instance_starting_leaves_the_first_instances_runs_alone(
    make_api: MakeApi, app_settings: Settings, client: ApiClient
) -> None:
    play(client, ScriptedTurn(text="A slow answer from the first instance", delay_ms=50))
    cid = await create(client)
    started = await send(client, cid)
    await until(client, cid, started["run_id"], "text_delta")

    async with make_api(app_settings) as second:
        frames = await finished(client, started)
        seen_by_second = await events(second, started["events_url"])

    assert frames[-1].data["status"] == "completed"
    assert seen_by_second == frames
