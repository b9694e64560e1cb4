"""AG-UI and a tool that asks again: the answering input's stream is a run that only
interrupts with the new question, and answering that one continues the turn."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from app.providers.scripted import Script, ScriptedProvider, ScriptedToolCall, ScriptedTurn
from app.settings import Settings
from app.store.repos.messages import MessageRepo
from tests.api.test_agui import events
from tests.fakes.db import ApiClient, MakeApi
from tests.support.lost_database import lose_connection_in

SCRIPT = Script(
    mode="rules",
    turns=[
        ScriptedTurn(after_tool="pick_colour", text="Painted."),
        ScriptedTurn(
            match="paint",
            tool_calls=[ScriptedToolCall(name="pick_colour", args={"item": "fence"})],
        ),
        ScriptedTurn(text="Hello."),
    ],
)


@pytest.fixture
async def client(make_api: MakeApi, app_settings: Settings) -> AsyncIterator[ApiClient]:
    settings = app_settings.model_copy(update={"tool_modules": ["tests.support.asking_tools"]})
    async with make_api(settings, providers={"scripted": ScriptedProvider(SCRIPT)}) as api:
        yield api


async def _agui(client: ApiClient, run_id: str, **extra: Any) -> list[dict[str, Any]]:
    body = {
        "threadId": "t-paint",
        "runId": run_id,
        "messages": [{"id": "u1", "role": "user", "content": "paint the fence"}],
        **extra,
    }
    response = await client.post("/api/agui", json=body)
    assert response.status_code == 200, response.text
    return events(response.text)


def _interrupt(stream: list[dict[str, Any]]) -> dict[str, Any]:
    outcome = stream[-1]["outcome"]
    assert outcome["type"] == "interrupt"
    [interrupt] = outcome["interrupts"]
    return dict(interrupt)


def _accept(interrupt: dict[str, Any], colour: str) -> list[dict[str, Any]]:
    payload = {"action": "accept", "content": {"colour": colour}}
    return [{"interruptId": interrupt["id"], "status": "resolved", "payload": payload}]


async def test_a_question_asked_again_interrupts_again_and_its_answer_continues(
    client: ApiClient,
) -> None:
    first = _interrupt(await _agui(client, "r1"))
    assert first["message"] == "Which colour for the fence?"

    vague = await _agui(client, "r2", resume=_accept(first, "any"))

    assert [e["type"] for e in vague] == ["RUN_STARTED", "RUN_FINISHED"]
    assert vague[0]["runId"] == "r2"
    second = _interrupt(vague)
    assert second["reason"] == "input_required"
    assert second["message"] == "Be specific: which colour?"
    assert second["id"] != first["id"] and second["toolCallId"] == first["toolCallId"]

    done = await _agui(client, "r3", resume=_accept(second, "green"))

    result = next(e for e in done if e["type"] == "TOOL_CALL_RESULT")
    assert '"colour":"green"' in result["content"]
    texts = "".join(e["delta"] for e in done if e["type"] == "TEXT_MESSAGE_CONTENT")
    assert texts == "Painted." and done[-1]["outcome"]["type"] == "success"


async def test_an_answer_whose_run_an_outage_kept_from_starting_continues_when_sent_again(
    client: ApiClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = _interrupt(await _agui(client, "r1"))
    body = {
        "threadId": "t-paint",
        "runId": "r2",
        "messages": [{"id": "u1", "role": "user", "content": "paint the fence"}],
        "resume": _accept(first, "green"),
    }
    with monkeypatch.context() as outage:
        # The answer commits and the tool finishes; reading the history to continue fails.
        lose_connection_in(outage, MessageRepo, "history", times=1)
        refused = await client.post("/api/agui", json=body)
    assert refused.status_code == 503, refused.text

    done = await _agui(client, "r2", resume=_accept(first, "green"))

    assert done[1]["type"] == "TOOL_CALL_RESULT" and '"colour":"green"' in done[1]["content"]
    texts = "".join(e["delta"] for e in done if e["type"] == "TEXT_MESSAGE_CONTENT")
    assert texts == "Painted." and done[-1]["outcome"]["type"] == "success"
