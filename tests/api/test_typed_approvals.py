"""A typed "yes" or "no" in the chat decides the conversation's one pending approval; a
negated, longer or ambiguous reply decides nothing and goes to the model."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from sqlalchemy import select

from app.settings import Settings
from app.store.repos.approvals import ApprovalRepo
from app.store.tables.core import AuditRow
from tests.api.test_approvals import create, node_names, say, waiting_delete
from tests.fakes.db import ApiClient, MakeApi
from tests.support.lost_database import lose_connection_in


@pytest.fixture
async def client(make_api: MakeApi, app_settings: Settings) -> AsyncIterator[ApiClient]:
    async with make_api(app_settings.model_copy(update={"example_tools_enabled": True})) as api:
        yield api


async def _approval(client: ApiClient, approval_id: str) -> dict[str, Any]:
    response = await client.get(f"/api/approvals/{approval_id}")
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def _delete_card(client: ApiClient, cid: str) -> dict[str, Any]:
    messages = (await client.get(f"/api/conversations/{cid}")).json()["messages"]
    cards = [
        p
        for m in messages
        if m["role"] == "assistant" and isinstance(m["content"], list)
        for p in m["content"]
        if p["type"] == "tool" and p["data"]["toolName"] == "delete_node"
    ]
    assert len(cards) == 1
    card: dict[str, Any] = cards[0]
    return card


@pytest.mark.parametrize("reply", ["yes", "Yes, please!", "да", "Да, давай", "approve"])
async def test_a_typed_yes_approves_runs_the_tool_once_and_the_conversation_goes_on(
    client: ApiClient, reply: str
) -> None:
    cid, approval_id = await waiting_delete(client)

    frames = await say(client, cid, reply)

    assert frames[-1].data["status"] == "completed"
    assert (await _approval(client, approval_id))["status"] == "approved"
    assert await node_names(client) == ["Analytical Engine"]
    card = await _delete_card(client, cid)
    assert card["data"]["status"] == "success"
    messages = (await client.get(f"/api/conversations/{cid}")).json()["messages"]
    assert [m["content"] for m in messages if m["role"] == "user"][-1] == reply
    async with client.services.db.sessions() as s:
        audit = (
            await s.scalars(select(AuditRow).where(AuditRow.action == "approval.approve"))
        ).one()
    assert (audit.details or {})["via"] == "typed"
    assert (await client.get("/api/approvals")).json()["data"] == []


@pytest.mark.parametrize("reply", ["no", "Отмена", "нет, не надо", "cancel"])
async def test_a_typed_no_rejects_and_nothing_is_deleted(client: ApiClient, reply: str) -> None:
    cid, approval_id = await waiting_delete(client)

    frames = await say(client, cid, reply)

    assert frames[-1].data["status"] == "completed"
    assert (await _approval(client, approval_id))["status"] == "rejected"
    assert await node_names(client) == ["Ada Lovelace", "Analytical Engine"]
    assert (await _delete_card(client, cid))["data"]["status"] == "error"


@pytest.mark.parametrize(
    "reply",
    [
        "don't delete it",
        "не удаляй",
        "yes but rename her first",
        "not yes",
        "what would that delete?",
        "не надо удалять",
        "don't, actually",
        "yes, but don't delete",
        "approve? no",
        "approve?",
        "да?",
    ],
)
async def test_a_negated_or_longer_reply_leaves_the_approval_pending(
    client: ApiClient, reply: str
) -> None:
    cid, approval_id = await waiting_delete(client)

    await say(client, cid, reply)

    assert (await _approval(client, approval_id))["status"] == "pending"
    assert await node_names(client) == ["Ada Lovelace", "Analytical Engine"]
    # The approvals API still decides it afterwards.
    decided = await client.post(f"/api/approvals/{approval_id}", json={"decision": "approve"})
    assert decided.status_code == 200, decided.text
    assert await node_names(client) == ["Analytical Engine"]


async def test_a_yes_in_another_conversation_decides_nothing_here(client: ApiClient) -> None:
    _, approval_id = await waiting_delete(client)
    elsewhere = await create(client)

    await say(client, elsewhere, "yes")

    assert (await _approval(client, approval_id))["status"] == "pending"
    assert await node_names(client) == ["Ada Lovelace", "Analytical Engine"]


async def test_a_typed_yes_while_the_database_is_out_of_reach_is_a_503_and_its_retry_decides(
    client: ApiClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    cid, approval_id = await waiting_delete(client)

    with monkeypatch.context() as outage:
        lose_connection_in(outage, ApprovalRepo, "claim")
        refused = await client.post(f"/api/conversations/{cid}/messages", json={"content": "yes"})

    # Not sent to the model as text with the approval left pending: refused, to retry.
    assert refused.status_code == 503, refused.text
    assert refused.json()["error"]["code"] == "database_unavailable"
    assert int(refused.headers["Retry-After"]) >= 1
    assert (await _approval(client, approval_id))["status"] == "pending"
    messages = (await client.get(f"/api/conversations/{cid}")).json()["messages"]
    assert "yes" not in [m["content"] for m in messages if m["role"] == "user"]

    frames = await say(client, cid, "yes")

    assert frames[-1].data["status"] == "completed"
    assert (await _approval(client, approval_id))["status"] == "approved"
    assert await node_names(client) == ["Analytical Engine"]
