"""Runs a dead process left behind are closed as interrupted, their partial answer kept; live
instances are left alone."""

from __future__ import annotations

import asyncio
from typing import Any

from app.domain.events import RunStart, SequencedEvent, TextDeltaEvent, ToolEnd, ToolStart
from app.domain.messages import Message
from app.domain.parts import ToolPart
from app.providers.scripted import ScriptedTurn
from app.runs.journal import RunJournal
from app.settings import Settings
from tests.api.runs.helpers import conversation, create, events, finished, play, send, until
from tests.fakes.db import ApiClient, MakeApi


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


async def _closed_dead_run(make_api: MakeApi, app_settings: Settings, client: ApiClient) -> str:
    """A dead process's run with three stored events, closed by a restarted instance."""
    cid = await create(client)
    ids = {"run_id": "run_dead", "message_id": "msg_dead"}
    await _dead_run(
        client,
        cid,
        [
            RunStart(model="scripted", conversation_id=cid, **ids),
            TextDeltaEvent(delta="Half ", **ids),
            TextDeltaEvent(delta="an answer", **ids),
        ],
    )
    lapsing = app_settings.model_copy(update={"run_lease_seconds": 0.2})
    async with make_api(lapsing) as restarted:
        deadline = asyncio.get_running_loop().time() + 5
        while (await conversation(restarted, cid))["active_run_id"] is not None:
            assert asyncio.get_running_loop().time() < deadline, "the dead run was never closed"
            await asyncio.sleep(0.05)
    return cid


async def test_a_reader_ahead_of_the_stored_log_still_learns_how_the_run_ended(
    make_api: MakeApi, app_settings: Settings, client: ApiClient
) -> None:
    # The dead process had streamed events 4..9 live, but stored only 1..3.
    cid = await _closed_dead_run(make_api, app_settings, client)
    url = f"/api/conversations/{cid}/runs/run_dead/events"

    frames = await events(client, url, **{"Last-Event-ID": "9"})

    assert [f.event for f in frames] == ["message_end", "run_end"]
    assert frames[-1].data["status"] == "interrupted"
    stored = frames[0].data["message"]
    assert stored["content"][0]["data"]["text"] == "Half an answer"
    assert all(f.id is not None and f.id > 9 for f in frames)


async def test_a_reader_that_saw_the_closing_events_is_told_there_is_nothing_more(
    make_api: MakeApi, app_settings: Settings, client: ApiClient
) -> None:
    cid = await _closed_dead_run(make_api, app_settings, client)
    url = f"/api/conversations/{cid}/runs/run_dead/events"
    closing = await events(client, url, **{"Last-Event-ID": "3"})

    again = await client.get(url, headers={"Last-Event-ID": str(closing[-1].id)})

    assert [f.event for f in closing] == ["message_end", "run_end"]
    assert again.status_code == 204
