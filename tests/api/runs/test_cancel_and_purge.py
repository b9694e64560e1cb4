"""Cancel keeps the partial answer and closes dangling tool calls; purge stops the run and
forgets it."""

from __future__ import annotations

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
    tools_of,
    until,
)
from tests.fakes.db import ApiClient


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


async def test_purging_a_conversation_mid_run_stops_the_run_first(client: ApiClient) -> None:
    play(client, ScriptedTurn(text="a long answer " * 50), delay_ms=20)
    cid = await create(client)
    started = await send(client, cid)
    await until(client, cid, started["run_id"], "text_delta")
    run = client.services.runs.manager.local(started["run_id"])
    assert run is not None

    purged = await client.delete(f"{CONVERSATIONS}/{cid}", params={"purge": "true"})

    assert purged.status_code == 204
    assert run.status == "cancelled"
    assert (await client.get(f"{CONVERSATIONS}/{cid}")).status_code == 404


async def test_a_purged_conversations_run_events_are_gone_from_memory_too(
    client: ApiClient,
) -> None:
    play(client, ScriptedTurn(text="remember me"))
    cid = await create(client)
    started = await send(client, cid)
    await until(client, cid, started["run_id"], "run_end")

    purged = await client.delete(f"{CONVERSATIONS}/{cid}", params={"purge": "true"})

    assert purged.status_code == 204
    events = await client.get(f"{CONVERSATIONS}/{cid}/runs/{started['run_id']}/events")
    assert events.status_code == 404
