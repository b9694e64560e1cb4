"""A long-running tool behind an approval, and in stateless turns.

Approved, it runs like an auto call: the decision leaves the card `loading` (the message
says it awaits a background result), and its result continues the conversation in a new
run. A stateless turn has no conversation to continue: the call's answer is a receipt
naming the job and its URL, the model says it started, and the client reads the result
there."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from app.providers.scripted import ScriptedProvider, ScriptedToolCall, ScriptedTurn
from app.settings import Settings
from tests.api.runs.helpers import conversation, create, finished, play, send, text_of, tools_of
from tests.api.runs.test_background_tools import answered, eventually, scripted_api
from tests.fakes.db import ApiClient, MakeApi

MODULES = ["tests.support.background_tools"]


@pytest.fixture
async def client(make_api: MakeApi, app_settings: Settings) -> AsyncIterator[ApiClient]:
    async with scripted_api(make_api, app_settings, MODULES) as api:
        yield api


def call(name: str, seconds: float, call_id: str = "c1") -> ScriptedTurn:
    return ScriptedTurn(
        tool_calls=[ScriptedToolCall(name=name, args={"seconds": seconds}, id=call_id)]
    )


async def _approve(client: ApiClient, cid: str) -> dict[str, Any]:
    """Send the turn that asks, approve its call: the decision's body."""
    frames = await finished(client, await send(client, cid, "Archive the logs"))
    assert frames[-1].data["status"] == "requires_action"
    approval_id = next(f for f in frames if f.event == "confirm_required").data["approval_id"]
    response = await client.post(f"/api/approvals/{approval_id}", json={"decision": "approve"})
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def test_an_approved_long_running_call_runs_in_the_background_and_continues(
    client: ApiClient,
) -> None:
    play(client, call("archive_logs", 0.2), ScriptedTurn(text="The logs are archived."))
    cid = await create(client)

    decided = await _approve(client, cid)

    part = decided["part"]["data"]
    assert part["status"] == "loading" and part["backgroundJobId"]
    assert decided["run_id"] is None  # nothing to resume yet: the job's result continues it
    detail = await eventually(lambda: answered(client, cid))
    asked, answer = [m for m in detail["messages"] if m["role"] == "assistant"]
    tool = tools_of(asked)[0]["data"]
    assert tool["status"] == "success" and tool["result"] == {"rows": 42, "seconds": 0.2}
    assert "finish_reason" not in asked["metadata"]
    assert text_of(answer) == "The logs are archived."
    job = (await client.get(f"/api/background-jobs/{part['backgroundJobId']}")).json()
    assert job["status"] == "succeeded"


async def test_while_it_runs_the_message_awaits_it_and_a_cancel_continues_too(
    client: ApiClient,
) -> None:
    play(client, call("archive_logs", 60), ScriptedTurn(text="Archiving was stopped."))
    cid = await create(client)
    job_id = (await _approve(client, cid))["part"]["data"]["backgroundJobId"]

    asked = (await conversation(client, cid))["messages"][-1]
    assert tools_of(asked)[0]["data"]["status"] == "loading"
    assert asked["metadata"]["finish_reason"] == "awaiting_background"
    assert asked["metadata"]["background_jobs"] == [job_id]
    cancelled = await client.post(f"/api/background-jobs/{job_id}/cancel")
    assert cancelled.json()["status"] == "cancelled"
    detail = await eventually(lambda: answered(client, cid))
    asked, answer = [m for m in detail["messages"] if m["role"] == "assistant"]
    assert tools_of(asked)[0]["data"]["status"] == "cancelled"
    assert text_of(answer) == "Archiving was stopped."


async def _job_done(client: ApiClient, url: str) -> dict[str, Any] | None:
    job: dict[str, Any] = (await client.get(url)).json()
    return job if job["status"] != "running" else None


async def test_a_stateless_chat_gets_a_receipt_naming_the_job_and_reads_the_result_there(
    client: ApiClient,
) -> None:
    play(client, call("build_report", 0.2), ScriptedTurn(text="The report is on its way."))

    response = await client.post(
        "/api/chat", json={"messages": [{"role": "user", "content": "Build the report"}]}
    )

    assert response.status_code == 200, response.text
    message = response.json()["message"]
    tool = tools_of(message)[0]["data"]
    job_id = tool["backgroundJobId"]
    assert tool["status"] == "success"
    assert tool["result"]["status"] == "running"
    assert tool["result"]["job_id"] == job_id
    assert tool["result"]["job_url"] == f"/api/background-jobs/{job_id}"
    assert text_of(message) == "The report is on its way."
    job = await eventually(lambda: _job_done(client, tool["result"]["job_url"]))
    assert job["status"] == "succeeded" and job["result"] == {"rows": 42, "seconds": 0.2}
    assert job["conversation_id"] is None


async def test_a_stateless_chat_completion_answers_at_once_and_the_job_runs_on(
    client: ApiClient,
) -> None:
    provider = play(client, call("build_report", 60), ScriptedTurn(text="Started the report."))

    response = await client.post(
        "/v1/chat/completions",
        json={"model": "scripted", "messages": [{"role": "user", "content": "Report"}]},
    )

    assert response.status_code == 200, response.text
    assert response.json()["choices"][0]["message"]["content"] == "Started the report."
    # The model read the receipt: the job, and that its result will not come back here.
    told = str(provider.requests[-1].messages[-1])
    assert "/api/background-jobs/job_" in told and "will not come back here" in told
    jobs = (await client.get("/api/background-jobs")).json()["data"]
    assert [(j["tool_name"], j["status"]) for j in jobs] == [("build_report", "running")]
    cancelled = await client.post(f"/api/background-jobs/{jobs[0]['id']}/cancel")
    assert cancelled.json()["status"] == "cancelled"


async def test_a_stateless_response_shows_the_receipt_as_the_calls_output(
    client: ApiClient,
) -> None:
    play(client, call("build_report", 0.2), ScriptedTurn(text="It is running."))

    response = await client.post("/v1/responses", json={"model": "scripted", "input": "Report"})

    assert response.status_code == 200, response.text
    mcp, message = response.json()["output"]
    assert (mcp["type"], mcp["name"], mcp["status"]) == ("mcp_call", "build_report", "completed")
    receipt = json.loads(mcp["output"])
    assert receipt["status"] == "running"
    job = await eventually(lambda: _job_done(client, receipt["job_url"]))
    assert job["result"] == {"rows": 42, "seconds": 0.2}
    assert message["content"][0]["text"] == "It is running."


def gated(gate: Path) -> ScriptedTurn:
    return ScriptedTurn(
        tool_calls=[ScriptedToolCall(name="gated_archive", args={"gate": str(gate)}, id="c1")]
    )


async def _settled_and_answered(
    client: ApiClient, provider: ScriptedProvider, cid: str, gate: Path, earlier_run: str
) -> None:
    """Let the job finish after the conversation moved on: its card settles where it is
    and a new run answers the result (the model sees it), shown on that run's stream."""
    assert len(provider.requests) == 2  # the job has not continued anything yet
    gate.touch()
    detail = await eventually(lambda: answered(client, cid, count=3))
    asked, _, answer = [m for m in detail["messages"] if m["role"] == "assistant"]
    tool = tools_of(asked)[0]["data"]
    assert tool["status"] == "success" and tool["result"] == {"archived": "logs"}
    assert "finish_reason" not in asked["metadata"]
    assert text_of(answer) == "The logs are archived."
    assert "'archived': 'logs'" in str(provider.requests[-1].messages)  # the settled card
    run_id = answer["metadata"]["run_id"]
    assert run_id != earlier_run
    frames = await finished(
        client, {"events_url": f"/api/conversations/{cid}/runs/{run_id}/events"}
    )
    update = next(f for f in frames if f.event == "part_update")
    assert update.data["cause"] == "background_finished"
    assert frames[-1].data["status"] == "completed"


async def test_a_long_running_call_approved_by_typing_yes_is_answered_when_it_finishes(
    client: ApiClient, tmp_path: Path
) -> None:
    gate = tmp_path / "gate"
    provider = play(
        client,
        gated(gate),
        ScriptedTurn(text="Archiving has started."),
        ScriptedTurn(text="The logs are archived."),
    )
    cid = await create(client)
    frames = await finished(client, await send(client, cid, "Archive the logs"))
    assert frames[-1].data["status"] == "requires_action"

    typed = await send(client, cid, "yes")
    frames = await finished(client, typed)

    assert frames[-1].data["status"] == "completed"
    detail = await conversation(client, cid)
    asked = next(m for m in detail["messages"] if m["role"] == "assistant")
    assert tools_of(asked)[0]["data"]["status"] == "loading"
    assert text_of(detail["messages"][-1]) == "Archiving has started."
    await _settled_and_answered(client, provider, cid, gate, typed["run_id"])


async def test_a_message_sent_while_an_approved_call_runs_does_not_swallow_its_result(
    client: ApiClient, tmp_path: Path
) -> None:
    gate = tmp_path / "gate"
    provider = play(
        client,
        gated(gate),
        ScriptedTurn(text="It is still running."),
        ScriptedTurn(text="The logs are archived."),
    )
    cid = await create(client)
    decided = await _approve(client, cid)
    assert decided["part"]["data"]["status"] == "loading"

    meanwhile = await send(client, cid, "How is it going?")
    frames = await finished(client, meanwhile)

    assert frames[-1].data["status"] == "completed"
    await _settled_and_answered(client, provider, cid, gate, meanwhile["run_id"])
