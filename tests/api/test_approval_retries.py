"""A decision is safe to retry: `POST /api/approvals/{id}` sent again is 409
`already_decided` (a second decision never runs the tool), and when it is the decision
taken the 409 names the run that continues the conversation, which continues at most once;
an outage after the decision committed is a 503 to retry, not a 200 that leaves the
conversation waiting for ever."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import text

from app.settings import Settings
from app.store.repos.approvals import ApprovalRepo
from app.store.repos.messages import MessageRepo
from tests.api.test_approvals import follow, node_names, waiting_delete
from tests.fakes.db import ApiClient, MakeApi
from tests.support.lost_database import lose_connection_in


@pytest.fixture
async def client(make_api: MakeApi, app_settings: Settings) -> AsyncIterator[ApiClient]:
    async with make_api(app_settings.model_copy(update={"example_tools_enabled": True})) as api:
        yield api


async def _decide(client: ApiClient, approval_id: str, status: int, **body: Any) -> Any:
    response = await client.post(f"/api/approvals/{approval_id}", json=body)
    assert response.status_code == status, response.text
    return response.json()


async def _assistant_messages(client: ApiClient, cid: str) -> int:
    detail = (await client.get(f"/api/conversations/{cid}")).json()
    return sum(m["role"] == "assistant" for m in detail["messages"])


async def test_an_outage_after_the_decision_is_a_503_and_the_same_decision_again_continues(
    client: ApiClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    cid, approval_id = await waiting_delete(client)
    answers = await _assistant_messages(client, cid)

    with monkeypatch.context() as outage:
        # The decision commits and the tool runs; reading the history to continue fails.
        lose_connection_in(outage, MessageRepo, "history", times=1)
        refused = await client.post(f"/api/approvals/{approval_id}", json={"decision": "approve"})

    assert refused.status_code == 503, refused.text
    assert refused.json()["error"]["code"] == "database_unavailable"
    assert int(refused.headers["Retry-After"]) >= 1
    assert (await client.get(f"/api/approvals/{approval_id}")).json()["status"] == "approved"
    assert await node_names(client) == ["Analytical Engine"]

    retried = (await _decide(client, approval_id, 409, decision="approve"))["error"]

    assert (retried["code"], retried["decision"]) == ("already_decided", "approved")
    assert retried["run_id"] is not None
    assert (await follow(client, retried["events_url"]))[-1].data["status"] == "completed"
    again = (await _decide(client, approval_id, 409, decision="approve"))["error"]
    assert again["run_id"] == retried["run_id"]
    assert await _assistant_messages(client, cid) == answers + 1
    assert await node_names(client) == ["Analytical Engine"]


async def _outcome_lost_now(client: ApiClient, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str]:
    """A conversation whose approved delete ran but whose outcome an outage lost, just now."""
    cid, approval_id = await waiting_delete(client)
    with monkeypatch.context() as outage:
        # The decision commits and the tool runs; storing what it did fails.
        lose_connection_in(outage, ApprovalRepo, "record_outcome", times=1)
        refused = await client.post(f"/api/approvals/{approval_id}", json={"decision": "approve"})
    assert refused.status_code == 503, refused.text
    assert await node_names(client) == ["Analytical Engine"]
    return cid, approval_id


async def _outcome_lost(client: ApiClient, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str]:
    """A conversation whose approved delete ran but whose outcome an outage lost, decided
    long enough ago that the attempt cannot still be running (past the tool's timeout)."""
    cid, approval_id = await _outcome_lost_now(client, monkeypatch)
    async with client.services.db.sessions.begin() as session:
        await session.execute(
            text("UPDATE tool_approvals SET decided_at = :past"),
            {"past": datetime(2000, 1, 1, tzinfo=UTC)},
        )
    return cid, approval_id


async def _the_call(client: ApiClient, cid: str, approval_id: str) -> dict[str, Any]:
    detail = (await client.get(f"/api/conversations/{cid}")).json()
    part: dict[str, Any] = next(
        p
        for m in detail["messages"]
        if m["role"] == "assistant"
        for p in m["content"]
        if p["type"] == "tool" and p["data"].get("approvalId") == approval_id
    )
    return part


async def test_a_decision_whose_outcome_an_outage_lost_is_closed_when_sent_again(
    client: ApiClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    cid, approval_id = await _outcome_lost(client, monkeypatch)
    answers = await _assistant_messages(client, cid)

    retried = (await _decide(client, approval_id, 409, decision="approve"))["error"]

    assert (retried["code"], retried["decision"]) == ("already_decided", "approved")
    assert retried["run_id"] is not None, retried
    assert (await follow(client, retried["events_url"]))[-1].data["status"] == "completed"
    call = await _the_call(client, cid, approval_id)
    assert call["data"]["status"] == "error"
    assert "may or may not have run" in call["data"]["bodyContent"]
    again = (await _decide(client, approval_id, 409, decision="approve"))["error"]
    assert again["run_id"] == retried["run_id"]
    assert await _assistant_messages(client, cid) == answers + 1
    assert await node_names(client) == ["Analytical Engine"]


async def test_another_decision_on_an_approval_whose_outcome_was_lost_settles_its_card(
    client: ApiClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    cid, approval_id = await _outcome_lost(client, monkeypatch)
    answers = await _assistant_messages(client, cid)

    refused = (await _decide(client, approval_id, 409, decision="reject"))["error"]

    assert (refused["code"], refused["decision"]) == ("already_decided", "approved")
    assert "run_id" not in refused
    call = await _the_call(client, cid, approval_id)
    assert call["data"]["status"] == "error"
    assert "may or may not have run" in call["data"]["bodyContent"]
    approval = (await client.get(f"/api/approvals/{approval_id}")).json()
    assert (approval["status"], approval["outcome"]) == ("approved", "error")
    assert await _assistant_messages(client, cid) == answers
    assert await node_names(client) == ["Analytical Engine"]


@pytest.mark.parametrize(
    "other",
    [
        {"decision": "approve"},
        {"decision": "reject", "reason": "another reason"},
        {"decision": "reject"},
    ],
)
async def test_a_decision_again_is_409_naming_the_run_only_when_it_is_the_one_taken(
    client: ApiClient, other: dict[str, Any]
) -> None:
    cid, approval_id = await waiting_delete(client)
    first = await _decide(client, approval_id, 200, decision="reject", reason="keep her")
    await follow(client, first["events_url"])
    answers = await _assistant_messages(client, cid)

    again = await _decide(client, approval_id, 409, decision="reject", reason="keep her")
    refused = await _decide(client, approval_id, 409, **other)

    assert again["error"]["code"] == "already_decided"
    assert again["error"]["decision"] == "rejected"
    assert (again["error"]["run_id"], again["error"]["events_url"]) == (
        first["run_id"],
        first["events_url"],
    )
    assert refused["error"]["code"] == "already_decided"
    assert refused["error"]["decision"] == "rejected"
    assert "run_id" not in refused["error"]
    assert await _assistant_messages(client, cid) == answers
    assert await node_names(client) == ["Ada Lovelace", "Analytical Engine"]


async def test_approving_again_names_the_run_but_other_edited_arguments_do_not(
    client: ApiClient,
) -> None:
    _, approval_id = await waiting_delete(client)
    first = await _decide(client, approval_id, 200, decision="approve")
    await follow(client, first["events_url"])

    again = await _decide(client, approval_id, 409, decision="approve", args={"id": "Ada Lovelace"})
    refused = await _decide(
        client, approval_id, 409, decision="approve", args={"id": "Analytical Engine"}
    )

    assert again["error"]["run_id"] == first["run_id"]
    assert refused["error"]["code"] == "already_decided"
    assert "run_id" not in refused["error"]
    assert await node_names(client) == ["Analytical Engine"]
