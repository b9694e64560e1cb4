"""A decision or an answer whose continuation a limit refuses (the caller's runs all busy)
is the limit's own 429 with `Retry-After`, not a 200 with no run: the conversation would
never go on. The same decision or answer sent again once a run slot is free is 409 naming
the run that continues the conversation, which continues it exactly once."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from app.providers.scripted import ScriptedProvider, ScriptedTurn, load_script
from app.settings import Settings
from tests.api.test_approval_retries import _assistant_messages, _decide
from tests.api.test_approvals import follow, node_names, waiting_delete
from tests.api.test_submission_questions import SCRIPT, answer, asked, colour
from tests.fakes.db import ApiClient, MakeApi

# A model that has not begun to answer yet: its run holds the caller's only run slot.
STALL = ScriptedTurn(match="^hold on", text="Later.", stall_seconds=120)


def _one_run_at_a_time(settings: Settings, **update: object) -> Settings:
    return settings.model_copy(update={"rate_limit_concurrent_runs": 1, **update})


async def _hold_the_run_slot(client: ApiClient) -> tuple[str, str]:
    cid = (await client.post("/api/conversations", json={})).json()["id"]
    sent = await client.post(f"/api/conversations/{cid}/messages", json={"content": "hold on"})
    assert sent.status_code == 202, sent.text
    return cid, sent.json()["run_id"]


async def _free_the_run_slot(client: ApiClient, held: tuple[str, str]) -> None:
    cid, run_id = held
    await client.post(f"/api/conversations/{cid}/runs/{run_id}/cancel")
    await follow(client, f"/api/conversations/{cid}/runs/{run_id}/events")


@pytest.fixture
async def deciding(make_api: MakeApi, app_settings: Settings) -> AsyncIterator[ApiClient]:
    script = load_script(None)
    script.turns.insert(0, STALL)
    settings = _one_run_at_a_time(app_settings, example_tools_enabled=True)
    async with make_api(settings, providers={"scripted": ScriptedProvider(script)}) as api:
        yield api


@pytest.fixture
async def answering(make_api: MakeApi, app_settings: Settings) -> AsyncIterator[ApiClient]:
    script = SCRIPT.model_copy(update={"turns": [STALL, *SCRIPT.turns]})
    settings = _one_run_at_a_time(app_settings, tool_modules=["tests.support.asking_tools"])
    async with make_api(settings, providers={"scripted": ScriptedProvider(script)}) as api:
        yield api


async def test_a_decision_refused_a_run_by_a_limit_is_429_and_continues_once_sent_again(
    deciding: ApiClient,
) -> None:
    client = deciding
    cid, approval_id = await waiting_delete(client)
    answers = await _assistant_messages(client, cid)
    held = await _hold_the_run_slot(client)

    refused = await client.post(f"/api/approvals/{approval_id}", json={"decision": "approve"})

    assert refused.status_code == 429, refused.text
    assert refused.json()["error"]["limit"] == "concurrent_runs"
    assert int(refused.headers["Retry-After"]) >= 1
    assert await node_names(client) == ["Analytical Engine"]  # the decision stands: Ada went
    await _free_the_run_slot(client, held)

    retried = (await _decide(client, approval_id, 409, decision="approve"))["error"]

    assert (retried["code"], retried["decision"]) == ("already_decided", "approved")
    assert retried["run_id"] is not None
    assert (await follow(client, retried["events_url"]))[-1].data["status"] == "completed"
    again = (await _decide(client, approval_id, 409, decision="approve"))["error"]
    assert again["run_id"] == retried["run_id"]
    assert await _assistant_messages(client, cid) == answers + 1


async def test_an_answer_refused_a_run_by_a_limit_is_429_and_continues_once_sent_again(
    answering: ApiClient,
) -> None:
    client = answering
    cid, call_id, question = await asked(client)
    held = await _hold_the_run_slot(client)
    body = {"elicitation_id": question, **colour("green")}

    refused = await client.post(f"/api/conversations/{cid}/submissions/{call_id}", json=body)

    assert refused.status_code == 429, refused.text
    assert refused.json()["error"]["limit"] == "concurrent_runs"
    assert int(refused.headers["Retry-After"]) >= 1
    await _free_the_run_slot(client, held)

    retried = (await answer(client, cid, call_id, 409, **body))["error"]

    assert (retried["code"], retried["action"]) == ("already_answered", "accept")
    assert retried["run_id"] is not None
    assert (await follow(client, retried["events_url"]))[-1].data["status"] == "completed"
    again = (await answer(client, cid, call_id, 409, **body))["error"]
    assert again["run_id"] == retried["run_id"]
    detail = (await client.get(f"/api/conversations/{cid}")).json()
    assert [m["role"] for m in detail["messages"]] == ["user", "assistant", "assistant"]
