"""An outage after the tool was called again with an answer but before its card was
rewritten (a 503) leaves no card waiting for ever: the answer sent again settles it, waiting
on the tool's next question at once, or, once the tool's time limit has passed, as an
error the model reads (the result was lost), and the conversation continues."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select, update

from app.store.repos.messages import MessageRepo
from app.store.tables.core import AuditRow
from app.store.tables.tools import ElicitationRow
from tests.api.test_approvals import follow
from tests.api.test_submission_questions import (
    answer,
    asked,
    client,
    colour,
    stored_part,
)
from tests.fakes.db import ApiClient
from tests.support.lost_database import lose_connection_in

__all__ = ["client"]  # the fixture: an app whose `pick_colour` asks, and asks again


async def answered_in_outage(
    client: ApiClient, monkeypatch: pytest.MonkeyPatch, cid: str, call_id: str, body: object
) -> None:
    """The answer commits and the tool is called; writing its card fails."""
    with monkeypatch.context() as outage:
        lose_connection_in(outage, MessageRepo, "upsert", times=1)
        refused = await client.post(f"/api/conversations/{cid}/submissions/{call_id}", json=body)
    assert refused.status_code == 503, refused.text
    assert refused.json()["error"]["code"] == "database_unavailable"


async def past_the_tools_time_limit(client: ApiClient) -> None:
    """As if the answers were given long ago (the tool's 30 s limit and the margin passed)."""
    async with client.services.db.write() as tx:
        rows = await tx.session.scalars(select(ElicitationRow))
        for row in rows.all():
            if row.answered_at is not None:
                await tx.session.execute(
                    update(ElicitationRow)
                    .where(ElicitationRow.id == row.id)
                    .values(answered_at=row.answered_at - timedelta(minutes=5))
                )


async def audited(client: ApiClient) -> list[tuple[str, str]]:
    async with client.services.db.sessions() as s:
        rows = await s.scalars(
            select(AuditRow).where(AuditRow.target_type == "elicitation").order_by(AuditRow.at)
        )
        return [(r.action, (r.details or {})["outcome"]) for r in rows.all()]


async def test_a_lost_result_settles_as_an_error_and_the_conversation_continues(
    client: ApiClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    cid, call_id, first = await asked(client)
    body = {"elicitation_id": first, **colour("green")}
    await answered_in_outage(client, monkeypatch, cid, call_id, body)
    assert (await stored_part(client, cid))["data"]["status"] == "waitingSubmission"

    early = (await answer(client, cid, call_id, 409, **body))["error"]
    assert (early["code"], early["run_id"]) == ("already_answered", None)  # may be in flight
    await past_the_tools_time_limit(client)

    retried = (await answer(client, cid, call_id, 409, **body))["error"]

    assert (retried["code"], retried["elicitation_id"]) == ("already_answered", first)
    assert retried["run_id"] is not None
    assert (await follow(client, retried["events_url"]))[-1].data["status"] == "completed"
    card = (await client.get(f"/api/conversations/{cid}")).json()["messages"][-2]["content"][0]
    assert card["data"]["status"] == "error"
    assert "lost" in card["data"]["bodyContent"]
    again = (await answer(client, cid, call_id, 409, **body))["error"]
    assert again["run_id"] == retried["run_id"]
    assert await audited(client) == [("elicitation.accept", "lost")]


async def test_a_lost_second_question_is_shown_at_once_and_answered(
    client: ApiClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    cid, call_id, first = await asked(client)
    body = {"elicitation_id": first, **colour("any")}
    await answered_in_outage(client, monkeypatch, cid, call_id, body)

    retried = (await answer(client, cid, call_id, 409, **body))["error"]

    assert (retried["code"], retried["elicitation_id"], retried["run_id"]) == (
        "already_answered",
        first,
        None,
    )
    waiting = (await stored_part(client, cid))["data"]
    assert waiting["status"] == "waitingSubmission"
    second = waiting["elicitation"]["id"]
    assert second != first and waiting["elicitation"]["message"] == "Be specific: which colour?"
    done = await answer(client, cid, call_id, 200, elicitation_id=second, **colour("red"))
    assert done["part"]["data"]["result"]["colour"] == "red"
    assert (await follow(client, done["events_url"]))[-1].data["status"] == "completed"
    assert await audited(client) == [
        ("elicitation.accept", "asked_again"),
        ("elicitation.accept", "success"),
    ]


async def test_an_answer_without_its_question_after_a_lost_second_question_answers_neither(
    client: ApiClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    cid, call_id, first = await asked(client)
    await answered_in_outage(client, monkeypatch, cid, call_id, colour("any"))

    retried = (await answer(client, cid, call_id, 409, **colour("any")))["error"]

    assert (retried["code"], retried["elicitation_id"]) == ("already_answered", first)
    waiting = (await stored_part(client, cid))["data"]
    assert waiting["status"] == "waitingSubmission" and waiting["elicitation"]["id"] != first
    assert await audited(client) == [("elicitation.accept", "asked_again")]


async def test_a_lost_result_is_settled_no_sooner_than_a_lost_decision_would_be(
    client: ApiClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same margin past the tool's time limit as a decision's (60 s): 45 s past it,
    the answering request may still be storing its result."""
    cid, call_id, first = await asked(client)
    body = {"elicitation_id": first, **colour("green")}
    await answered_in_outage(client, monkeypatch, cid, call_id, body)
    async with client.services.db.write() as tx:
        await tx.session.execute(
            update(ElicitationRow)
            .where(ElicitationRow.answered_at.is_not(None))
            .values(answered_at=datetime.now(UTC) - timedelta(seconds=30 + 45))
        )

    early = (await answer(client, cid, call_id, 409, **body))["error"]

    assert (early["code"], early["run_id"]) == ("already_answered", None)
    assert (await stored_part(client, cid))["data"]["status"] == "waitingSubmission"


async def _green_in_outage(client: ApiClient, monkeypatch: pytest.MonkeyPatch) -> str:
    """A conversation whose question was answered "green" in an outage; its id."""
    cid, call_id, first = await asked(client)
    await answered_in_outage(
        client, monkeypatch, cid, call_id, {"elicitation_id": first, **colour("green")}
    )
    return cid


async def test_reading_the_conversation_settles_a_lost_result_though_no_answer_is_sent(
    client: ApiClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nobody sends the answer again: the card waited on an answered question for ever."""
    cid = await _green_in_outage(client, monkeypatch)
    assert (await stored_part(client, cid))["data"]["status"] == "waitingSubmission"  # in flight
    await past_the_tools_time_limit(client)

    card = await stored_part(client, cid)

    assert card["data"]["status"] == "error"
    assert "may or may not have acted" in card["data"]["bodyContent"]
    assert await audited(client) == [("elicitation.accept", "lost")]
