"""An AG-UI `resume` input whose decisions committed but whose run an outage kept from
starting (a 503) continues the thread when the same input (same `threadId`, `runId` and
input) is sent again: a decision already taken as it asks is its own, not a second one.
Once the thread went on, the same input is refused as a second decision is."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import text

from app.store.repos.approvals import ApprovalRepo
from app.store.repos.messages import MessageRepo
from tests.api.test_agui import client, run, stored, text_of, types, user
from tests.api.test_approvals import node_names
from tests.fakes.db import ApiClient
from tests.support.lost_database import lose_connection_in

__all__ = ["client"]  # the fixture: the example graph tools and a scripted model


async def test_a_resume_whose_run_an_outage_kept_from_starting_starts_it_when_sent_again(
    client: ApiClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    await run(client, "t-outage", [user("add Ada")])
    asked = await run(client, "t-outage", [user("delete Ada")])
    [interrupt] = asked[-1]["outcome"]["interrupts"]
    resume = [{"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": True}}]
    body = {"threadId": "t-outage", "runId": "run-go", "messages": [user("delete Ada")]}
    with monkeypatch.context() as outage:
        # The decision commits and the tool runs; reading the history to continue fails.
        lose_connection_in(outage, MessageRepo, "history", times=1)
        refused = await client.post("/api/agui", json={**body, "resume": resume})
    assert refused.status_code == 503, refused.text
    assert await node_names(client) == []

    other = await run(client, "t-outage", [user("delete Ada")], resume=resume, status=409)
    retried = await run(client, "t-outage", [user("delete Ada")], resume=resume, run_id="run-go")

    assert other["error"]["code"] == "already_decided"  # another input: as before
    assert types(retried)[:2] == ["RUN_STARTED", "TOOL_CALL_RESULT"]
    assert retried[1]["toolCallId"] == interrupt["toolCallId"]
    assert text_of(retried) == "Decided." and retried[-1]["outcome"]["type"] == "success"
    again = await run(
        client, "t-outage", [user("delete Ada")], resume=resume, run_id="run-go", status=409
    )
    assert again["error"]["code"] == "already_decided"  # the thread went on: as before
    roles = [m["role"] for m in await stored(client, "t-outage")]
    assert roles == ["user", "assistant", "user", "assistant", "assistant"]
    assert await node_names(client) == []


async def _outcome_lost(client: ApiClient, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """A thread whose approved delete ran but whose outcome an outage lost, decided long
    enough ago that the attempt cannot still be running; its interrupt."""
    await run(client, "t-lost", [user("add Ada")])
    asked = await run(client, "t-lost", [user("delete Ada")])
    [interrupt] = asked[-1]["outcome"]["interrupts"]
    with monkeypatch.context() as outage:
        # The decision commits and the tool runs; storing what it did fails.
        lose_connection_in(outage, ApprovalRepo, "record_outcome", times=1)
        refused = await run(
            client, "t-lost", [user("delete Ada")], resume=_resume(interrupt, True), status=503
        )
    assert refused["error"]["code"] == "database_unavailable"
    assert await node_names(client) == []
    async with client.services.db.sessions.begin() as session:
        await session.execute(
            text("UPDATE tool_approvals SET decided_at = :past"),
            {"past": datetime(2000, 1, 1, tzinfo=UTC)},
        )
    return dict(interrupt)


def _resume(interrupt: dict[str, Any], approved: bool) -> list[dict[str, Any]]:
    if not approved:
        return [{"interruptId": interrupt["id"], "status": "cancelled"}]
    return [{"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": True}}]


async def test_a_resume_on_an_approval_whose_outcome_was_lost_settles_it_and_goes_on(
    client: ApiClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As the decision sent to POST /api/approvals: it was 409 and the card waited."""
    interrupt = await _outcome_lost(client, monkeypatch)

    resumed = await run(client, "t-lost", [user("delete Ada")], resume=_resume(interrupt, True))

    result = next(e for e in resumed if e["type"] == "TOOL_CALL_RESULT")
    assert result["toolCallId"] == interrupt["toolCallId"]
    assert "may or may not have run" in result["content"]
    assert text_of(resumed) == "Decided." and resumed[-1]["outcome"]["type"] == "success"
    assert await node_names(client) == []  # the delete never ran twice


async def test_another_decision_on_a_lost_outcome_settles_its_card_and_is_409(
    client: ApiClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    interrupt = await _outcome_lost(client, monkeypatch)

    refused = await run(
        client, "t-lost", [user("delete Ada")], resume=_resume(interrupt, False), status=409
    )

    assert (refused["error"]["code"], refused["error"]["decision"]) == (
        "already_decided",
        "approved",
    )
    async with client.services.db.read() as tx:
        approval = await tx.approvals.get("local", interrupt["id"])
    assert approval.outcome_status == "error"
