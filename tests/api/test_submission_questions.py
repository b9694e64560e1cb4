"""A tool that asks again after an answer: an answer names the question it answers
(`elicitation_id`, the part's `data.elicitation.id`), so the first answer sent again is 409
`already_answered` naming the first question and never answers the second."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from sqlalchemy import select

from app.providers.scripted import Script, ScriptedProvider, ScriptedToolCall, ScriptedTurn
from app.settings import Settings
from app.store.tables.core import AuditRow
from tests.api.test_approvals import follow
from tests.fakes.db import ApiClient, MakeApi

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


async def asked(client: ApiClient) -> tuple[str, str, str]:
    """A conversation whose model called `pick_colour`, which asked which colour: its id,
    the call's id and the question's id."""
    cid = (await client.post("/api/conversations", json={})).json()["id"]
    started = await client.post(f"/api/conversations/{cid}/messages", json={"content": "paint"})
    frames = await follow(client, started.json()["events_url"])
    part = next(f for f in frames if f.event == "confirm_required").data["part"]
    return cid, part["id"], part["data"]["elicitation"]["id"]


async def answer(client: ApiClient, cid: str, call_id: str, status: int, **body: Any) -> Any:
    response = await client.post(f"/api/conversations/{cid}/submissions/{call_id}", json=body)
    assert response.status_code == status, response.text
    return response.json()


def colour(name: str) -> dict[str, Any]:
    return {"action": "accept", "content": {"colour": name}}


async def stored_part(client: ApiClient, cid: str) -> dict[str, Any]:
    detail = (await client.get(f"/api/conversations/{cid}")).json()
    part: dict[str, Any] = detail["messages"][-1]["content"][0]
    return part


async def times_answered(client: ApiClient) -> int:
    """The tool was called again once per audited answer."""
    async with client.services.db.sessions() as s:
        rows = await s.scalars(select(AuditRow).where(AuditRow.target_type == "elicitation"))
        return len(rows.all())


async def test_the_first_answer_sent_again_after_a_second_question_never_answers_it(
    client: ApiClient,
) -> None:
    cid, call_id, first = await asked(client)
    vague = await answer(client, cid, call_id, 200, elicitation_id=first, **colour("any"))
    second = vague["part"]["data"]["elicitation"]["id"]
    assert second != first and vague["part"]["data"]["status"] == "waitingSubmission"

    again = await answer(client, cid, call_id, 409, elicitation_id=first, **colour("any"))

    error = again["error"]
    assert (error["code"], error["action"], error["elicitation_id"]) == (
        "already_answered",
        "accept",
        first,
    )
    assert error["run_id"] is None  # the call still waits for the second answer
    waiting = await stored_part(client, cid)
    assert waiting["data"]["status"] == "waitingSubmission"
    assert waiting["data"]["elicitation"]["id"] == second
    assert await times_answered(client) == 1

    done = await answer(client, cid, call_id, 200, elicitation_id=second, **colour("green"))

    assert done["part"]["data"]["result"]["colour"] == "green"
    assert (await follow(client, done["events_url"]))[-1].data["status"] == "completed"


async def test_another_answer_to_an_answered_question_names_it_too(client: ApiClient) -> None:
    cid, call_id, first = await asked(client)
    await answer(client, cid, call_id, 200, elicitation_id=first, **colour("any"))

    other = await answer(client, cid, call_id, 409, elicitation_id=first, action="decline")

    assert (other["error"]["code"], other["error"]["elicitation_id"]) == (
        "already_answered",
        first,
    )
    assert "run_id" not in other["error"]
    assert await times_answered(client) == 1


async def test_an_answer_naming_no_question_of_this_call_is_404(client: ApiClient) -> None:
    cid, call_id, first = await asked(client)
    other_cid, _, other_question = await asked(client)

    unknown = await answer(client, cid, call_id, 404, elicitation_id="elic_nope", **colour("red"))
    elsewhere = await answer(
        client, cid, call_id, 404, elicitation_id=other_question, **colour("red")
    )

    assert unknown["error"]["code"] == elsewhere["error"]["code"] == "submission_not_found"
    assert (await stored_part(client, cid))["data"]["elicitation"]["id"] == first
    assert (await stored_part(client, other_cid))["data"]["elicitation"]["id"] == other_question
    assert await times_answered(client) == 0


async def test_an_answer_without_its_question_answers_the_newest_as_before(
    client: ApiClient,
) -> None:
    cid, call_id, _ = await asked(client)
    await answer(client, cid, call_id, 200, **colour("any"))

    done = await answer(client, cid, call_id, 200, **colour("blue"))

    assert done["part"]["data"]["result"]["colour"] == "blue"
