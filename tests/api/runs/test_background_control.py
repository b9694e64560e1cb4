"""Background jobs are stopped by cancel, bounded by the caps, owner-scoped, and never
lost: a client that goes away stops nothing, and a restart resumes or fails them."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from app.domain.identity import Caller
from app.providers.scripted import Script, ScriptedProvider, ScriptedToolCall, ScriptedTurn
from app.runs.requests import TurnInput
from app.settings import Settings
from app.store.repos import ConversationRepo
from app.toolruntime.background import restart_message
from tests.api.runs.helpers import conversation, create, finished, play, send, text_of, tools_of
from tests.api.runs.test_background_tools import answered, eventually, export
from tests.fakes.db import ApiClient, MakeApi

MODULES = ["app.examples.ops.backup", "tests.support.background_tools"]
JOBS = "/api/background-jobs"


def _settings(app_settings: Settings, **extra: Any) -> Settings:
    return app_settings.model_copy(update={"tool_modules": MODULES, **extra})


def _scripted(*turns: ScriptedTurn) -> dict[str, ScriptedProvider]:
    return {"scripted": ScriptedProvider(Script(mode="sequence", turns=list(turns)))}


@pytest.fixture
async def client(make_api: MakeApi, app_settings: Settings) -> AsyncIterator[ApiClient]:
    async with make_api(_settings(app_settings, background_tools_per_user=1)) as api:
        yield api


def report(seconds: float, call_id: str = "r1") -> ScriptedTurn:
    call = ScriptedToolCall(name="build_report", args={"seconds": seconds}, id=call_id)
    return ScriptedTurn(tool_calls=[call])


async def _started(client: ApiClient, turn: ScriptedTurn, *after: ScriptedTurn) -> tuple[str, str]:
    """A conversation whose turn left a background job running: (conversation, job)."""
    play(client, turn, *after)
    cid = await create(client)
    frames = await finished(client, await send(client, cid, "Go"))
    update = next(f for f in frames if f.event == "part_update")
    return cid, update.data["part"]["data"]["backgroundJobId"]


async def _job(client: ApiClient, job_id: str) -> dict[str, Any]:
    response = await client.get(f"{JOBS}/{job_id}")
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def test_cancelling_a_job_stops_it_and_the_model_hears_it(client: ApiClient) -> None:
    cid, job_id = await _started(client, export(30), ScriptedTurn(text="Stopped the export."))

    response = await client.post(f"{JOBS}/{job_id}/cancel")

    assert response.status_code == 200, response.text
    assert response.json()["status"] == "cancelled"
    detail = await eventually(lambda: answered(client, cid))
    call, answer = [m for m in detail["messages"] if m["role"] == "assistant"]
    assert tools_of(call)[0]["data"]["status"] == "cancelled"
    assert text_of(answer) == "Stopped the export."
    assert (await _job(client, job_id))["status"] == "cancelled"
    # Its slot is free again (the cap is 1 here): a new job starts.
    _, second = await _started(client, export(30, "c2"))
    assert (await _job(client, second))["status"] == "running"


async def test_cancelling_the_run_stops_its_jobs_and_closes_their_cards(
    client: ApiClient,
) -> None:
    play(client, export(30))
    cid = await create(client)
    started = await send(client, cid, "Back up")
    frames = await finished(client, started)
    job_id = next(f for f in frames if f.event == "part_update").data["part"]["data"][
        "backgroundJobId"
    ]

    cancel = await client.post(f"/api/conversations/{cid}/runs/{started['run_id']}/cancel")

    assert cancel.status_code == 200, cancel.text
    assert (await _job(client, job_id))["status"] == "cancelled"
    detail = await conversation(client, cid)
    assert detail["active_run_id"] is None
    assert [tools_of(m)[0]["data"]["status"] for m in detail["messages"][1:]] == ["cancelled"]


async def test_a_call_past_the_users_cap_is_an_error_the_model_reads(client: ApiClient) -> None:
    await _started(client, export(30))

    _, over = await _capped(client)

    assert over["data"]["status"] == "error"
    assert over["data"]["result"]["code"] == "background_limit"
    assert "background tasks running" in over["data"]["result"]["error"]
    assert [j["status"] for j in (await client.get(JOBS)).json()["data"]] == ["running"]


async def _capped(client: ApiClient) -> tuple[str, dict[str, Any]]:
    play(client, export(30, "c2"), ScriptedTurn(text="Too busy."))
    cid = await create(client)
    await finished(client, await send(client, cid, "Another one"))
    call = (await conversation(client, cid))["messages"][1]
    return cid, tools_of(call)[0]


async def test_the_global_cap_holds_for_every_user(
    make_api: MakeApi, app_settings: Settings
) -> None:
    settings = _settings(app_settings, background_tools_total=1)
    async with make_api(settings, providers=_scripted()) as client:
        await _started(client, export(30))
        play(client, export(30, "c9"))
        async with client.services.db.sessions.begin() as session:
            theirs = (await ConversationRepo(session).create("someone-else", title="t")).id
        run = await client.services.runs.send(Caller("someone-else"), theirs, "Go", TurnInput())
        await run.wait()
        stored = (await conversation_of(client, "someone-else", theirs))[-1]
    assert tools_of(stored)[0]["data"]["result"]["code"] == "background_limit"


async def conversation_of(client: ApiClient, owner: str, cid: str) -> list[dict[str, Any]]:
    async with client.services.db.read() as tx:
        history = await tx.messages.history(owner, cid)
    return [m.model_dump(mode="json") for m in history]


async def test_another_users_job_is_404(client: ApiClient) -> None:
    play(client, export(30, "c9"))
    async with client.services.db.sessions.begin() as session:
        theirs = (await ConversationRepo(session).create("someone-else", title="t")).id
    run = await client.services.runs.send(Caller("someone-else"), theirs, "Go", TurnInput())
    await run.wait()
    [job] = await client.services.background.of_owner("someone-else")

    assert (await client.get(f"{JOBS}/{job.id}")).status_code == 404
    cancel = await client.post(f"{JOBS}/{job.id}/cancel")
    assert cancel.status_code == 404
    assert cancel.json()["error"]["code"] == "job_not_found"
    assert (await client.get(JOBS)).json()["data"] == []
    assert (await client.services.background.get("someone-else", job.id)).status == "running"


async def test_a_client_that_disconnects_stops_nothing(client: ApiClient) -> None:
    play(client, export(0.3), ScriptedTurn(text="Done."))
    cid = await create(client)
    started = await send(client, cid, "Back up")

    async with client.stream("GET", started["events_url"]) as stream:
        async for line in stream.aiter_lines():
            if "background_started" in line:
                break  # the tab closes while the job runs

    detail = await eventually(lambda: answered(client, cid))
    assert text_of(detail["messages"][-1]) == "Done."
    assert tools_of(detail["messages"][1])[0]["data"]["status"] == "success"


async def _left_by_dead_process(
    make_api: MakeApi, settings: Settings, turn: ScriptedTurn
) -> tuple[str, str]:
    """A job still running when its process stopped: (conversation, job)."""
    async with make_api(settings, providers=_scripted(turn)) as first:
        cid = await create(first)
        frames = await finished(first, await send(first, cid, "Go"))
    update = next(f for f in frames if f.event == "part_update")
    return cid, update.data["part"]["data"]["backgroundJobId"]


async def test_after_a_restart_a_job_that_cannot_resume_fails_with_a_clear_result(
    make_api: MakeApi, app_settings: Settings
) -> None:
    settings = _settings(app_settings, run_lease_seconds=0.3)
    cid, job_id = await _left_by_dead_process(make_api, settings, report(30))

    again = _scripted(ScriptedTurn(text="The report was lost; shall I run it again?"))
    async with make_api(settings, providers=again) as restarted:
        detail = await eventually(lambda: answered(restarted, cid))
        job = await _job(restarted, job_id)

    assert job["status"] == "failed"
    assert job["error"] == restart_message("build_report")
    call, answer = [m for m in detail["messages"] if m["role"] == "assistant"]
    assert tools_of(call)[0]["data"]["status"] == "error"
    assert tools_of(call)[0]["data"]["result"] == {"error": restart_message("build_report")}
    assert text_of(answer) == "The report was lost; shall I run it again?"


async def test_after_a_restart_a_resumable_job_runs_again_and_delivers(
    make_api: MakeApi, app_settings: Settings
) -> None:
    settings = _settings(app_settings, run_lease_seconds=0.3)
    cid, job_id = await _left_by_dead_process(make_api, settings, export(0.6))

    async with make_api(settings, providers=_scripted(ScriptedTurn(text="Exported."))) as again:
        detail = await eventually(lambda: answered(again, cid))
        job = await _job(again, job_id)

    assert (job["status"], job["attempts"], job["delivered"]) == ("succeeded", 2, True)
    call, answer = [m for m in detail["messages"] if m["role"] == "assistant"]
    assert tools_of(call)[0]["data"]["result"]["database"] == "main"
    assert text_of(answer) == "Exported."
