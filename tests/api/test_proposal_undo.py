"""Undo of an applied proposal batch through the API: one step, all or nothing, only if
nothing the batch touched has changed since, audited, once."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from app.examples.graph.tables import GraphEdgeRow, GraphNodeRow
from app.store.repos import ConversationRepo
from app.store.tables.core import AuditRow
from app.store.tables.tools import ProposalRow
from tests.api.test_approvals import ADA, create, node_names, say
from tests.api.test_proposals import _ok, _url, client
from tests.fakes.db import ApiClient

__all__ = ["client"]  # the example tools' API client, shared with the queue's tests


async def _applied_demo(client: ApiClient) -> tuple[str, dict[str, Any]]:
    cid = await create(client, mode="propose")
    await say(client, cid, ADA)
    return cid, await _ok(await client.post(_url(cid, "/approve")))


async def _edges(client: ApiClient) -> list[str]:
    async with client.services.db.sessions() as s:
        return sorted(e.relation for e in await s.scalars(select(GraphEdgeRow)))


async def _statuses(client: ApiClient, batch_id: str) -> list[str]:
    async with client.services.db.sessions() as s:
        rows = await s.scalars(select(ProposalRow).where(ProposalRow.batch_id == batch_id))
        return sorted(r.status for r in rows)


async def test_undo_takes_the_whole_last_batch_back_and_audits_it(client: ApiClient) -> None:
    cid, batch = await _applied_demo(client)
    assert await node_names(client) == ["Ada Lovelace", "Analytical Engine"]

    undone = await _ok(await client.post(_url(cid, "/undo")))

    assert undone["batch_id"] == batch["batch_id"]
    assert [c["tool_name"] for c in undone["undone"]] == ["add_node", "add_node", "connect"]
    assert undone["undone"][2]["entities"][0].startswith("edge ")
    assert await node_names(client) == []
    assert await _edges(client) == []
    assert await _statuses(client, batch["batch_id"]) == ["undone"] * 3
    async with client.services.db.sessions() as s:
        audit = await s.get(AuditRow, undone["audit_id"])
    assert audit is not None and audit.details is not None
    assert audit.action == "proposals.undo"
    assert audit.details["batch_id"] == batch["batch_id"]
    assert audit.details["apply_audit_id"] == batch["audit_id"]
    assert audit.details["undone_by"] == client.services.settings.local_user_id


async def test_the_batches_list_shows_applied_and_undone_batches(client: ApiClient) -> None:
    cid, first = await _applied_demo(client)
    await say(client, cid, "propose a birth year for Ada")
    second = await _ok(await client.post(_url(cid, "/approve")))
    await _ok(await client.post(_url(cid, "/undo")))

    listed = (await _ok(await client.get(_url(cid, "/batches"))))["data"]

    assert [(b["batch_id"], b["status"]) for b in listed] == [
        (second["batch_id"], "undone"),
        (first["batch_id"], "applied"),
    ]
    assert [p["status"] for p in listed[0]["proposals"]] == ["undone"]
    assert [p["tool_name"] for p in listed[1]["proposals"]] == ["add_node", "add_node", "connect"]


async def test_a_batch_is_undone_once(client: ApiClient) -> None:
    cid, batch = await _applied_demo(client)
    await _ok(await client.post(_url(cid, "/undo"), json={"batch_id": batch["batch_id"]}))

    again = await client.post(_url(cid, "/undo"), json={"batch_id": batch["batch_id"]})
    last = await client.post(_url(cid, "/undo"))

    assert again.status_code == 409
    assert again.json()["error"]["code"] == "batch_already_undone"
    assert last.status_code == 404
    assert last.json()["error"]["code"] == "batch_not_found"


async def test_a_change_since_the_apply_is_409_naming_it_and_nothing_is_undone(
    client: ApiClient,
) -> None:
    cid, batch = await _applied_demo(client)
    ada = batch["applied"][0]
    # Someone edits Ada after the batch: her node is no longer what the batch left.
    async with client.services.db.sessions.begin() as s:
        row = await s.get(GraphNodeRow, ada["real_id"])
        assert row is not None
        row.properties = {"born": 1815}

    response = await client.post(_url(cid, "/undo"))

    assert response.status_code == 409
    error = response.json()["error"]
    assert error["code"] == "undo_conflict"
    assert error["entity"] == f"node {ada['real_id']}"
    assert error["proposal_id"] in {c["proposal_id"] for c in batch["applied"]}
    assert await node_names(client) == ["Ada Lovelace", "Analytical Engine"]
    assert await _edges(client) == ["designed"]
    assert await _statuses(client, batch["batch_id"]) == ["applied"] * 3


async def test_batches_undo_newest_first_and_a_property_gets_its_old_value(
    client: ApiClient,
) -> None:
    cid, first = await _applied_demo(client)
    await say(client, cid, "propose a birth year for Ada")
    second = await _ok(await client.post(_url(cid, "/approve")))

    older = await client.post(_url(cid, "/undo"), json={"batch_id": first["batch_id"]})
    newest = await _ok(await client.post(_url(cid, "/undo")))

    assert older.status_code == 409
    assert older.json()["error"]["code"] == "not_last_batch"
    assert newest["batch_id"] == second["batch_id"]
    async with client.services.db.sessions() as s:
        ada = await s.get(GraphNodeRow, first["applied"][0]["real_id"])
    assert ada is not None and ada.properties == {}
    assert (await _ok(await client.post(_url(cid, "/undo"))))["batch_id"] == first["batch_id"]
    assert await node_names(client) == []


async def test_another_users_conversation_is_not_found(client: ApiClient) -> None:
    async with client.services.db.sessions.begin() as s:
        foreign = (await ConversationRepo(s).create("someone-else", mode="propose")).id

    response = await client.post(_url(foreign, "/undo"))

    assert response.status_code == 404
