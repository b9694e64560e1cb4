"""Undo across a workspace: the last batch applied in any of the caller's conversations
bound to it, with the conversation route's rules (newest first, once, 409 naming what
changed, approver or admin), its cards rewritten to say undone."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from app.examples.graph.tables import GraphNodeRow
from app.store.tables.core import AuditRow
from tests.api.test_approvals import ADA, create, node_names, say
from tests.api.test_proposals import _ok, _url, client
from tests.api.test_settled_parts import _cards
from tests.fakes.db import ApiClient

__all__ = ["client"]

WS = "ws-board-1"


def _ws(action: str, workspace: str = WS) -> str:
    return f"/api/workspaces/{workspace}/proposals{action}"


async def _applied(client: ApiClient, text: str, workspace: str = WS) -> tuple[str, Any]:
    cid = await create(client, mode="propose", scope={"workspace_id": workspace})
    await say(client, cid, text)
    return cid, await _ok(await client.post(_url(cid, "/approve")))


async def test_the_workspace_undo_takes_the_newest_batch_of_any_of_its_conversations(
    client: ApiClient,
) -> None:
    first_cid, first = await _applied(client, ADA)
    second_cid, second = await _applied(client, "propose a birth year for Ada")

    newest = await _ok(await client.post(_ws("/undo")))
    older = await _ok(await client.post(_ws("/undo")))
    none_left = await client.post(_ws("/undo"))

    assert newest["batch_id"] == second["batch_id"]
    assert older["batch_id"] == first["batch_id"]
    assert none_left.status_code == 404
    assert none_left.json()["error"]["code"] == "batch_not_found"
    assert await node_names(client) == []
    async with client.services.db.sessions() as s:
        audit = await s.get(AuditRow, newest["audit_id"])
    assert audit is not None and audit.action == "proposals.undo"
    assert audit.target_id == second_cid
    assert audit.details is not None
    assert audit.details["scope"] == {"kind": "workspace", "id": WS}
    assert first_cid != second_cid


async def test_the_workspace_batches_list_shows_each_conversations_batches(
    client: ApiClient,
) -> None:
    _, first = await _applied(client, ADA)
    _, second = await _applied(client, "propose a birth year for Ada")
    await _applied(client, ADA, workspace="ws-elsewhere")
    await _ok(await client.post(_ws("/undo")))

    listed = (await _ok(await client.get(_ws("/batches"))))["data"]

    assert [(b["batch_id"], b["status"]) for b in listed] == [
        (second["batch_id"], "undone"),
        (first["batch_id"], "applied"),
    ]


async def test_an_undone_batchs_cards_say_undone(client: ApiClient) -> None:
    cid, _ = await _applied(client, ADA)

    await _ok(await client.post(_ws("/undo")))

    cards = await _cards(client, cid, "add_node")
    assert cards and all(c["data"]["status"] == "cancelled" for c in cards)
    assert all(c["data"]["result"]["undone"] is True for c in cards)


async def test_a_batch_of_another_workspace_is_not_found(client: ApiClient) -> None:
    await _applied(client, ADA)
    _, other = await _applied(client, ADA, workspace="ws-elsewhere")

    asked = await client.post(_ws("/undo"), json={"batch_id": other["batch_id"]})

    assert asked.status_code == 404
    assert asked.json()["error"]["code"] == "batch_not_found"


async def test_an_older_batch_is_409_not_last_batch(client: ApiClient) -> None:
    _, first = await _applied(client, ADA)
    await _applied(client, "propose a birth year for Ada")

    older = await client.post(_ws("/undo"), json={"batch_id": first["batch_id"]})

    assert older.status_code == 409
    assert older.json()["error"]["code"] == "not_last_batch"


async def test_a_change_since_is_409_naming_it_and_nothing_is_undone(client: ApiClient) -> None:
    _, batch = await _applied(client, ADA)
    ada = batch["applied"][0]
    async with client.services.db.sessions.begin() as s:
        row = await s.get(GraphNodeRow, ada["real_id"])
        assert row is not None
        row.properties = {"born": 1815}

    response = await client.post(_ws("/undo"))

    assert response.status_code == 409
    error = response.json()["error"]
    assert error["code"] == "undo_conflict"
    assert error["entity"] == f"node {ada['real_id']}"
    async with client.services.db.sessions() as s:
        names = sorted(n.name for n in await s.scalars(select(GraphNodeRow)))
    assert names == ["Ada Lovelace", "Analytical Engine"]


async def test_a_workspace_with_none_of_the_callers_conversations_is_not_found(
    client: ApiClient,
) -> None:
    listed = await client.get(_ws("/batches", "ws-nobody"))
    undone = await client.post(_ws("/undo", "ws-nobody"))

    assert listed.status_code == 404
    assert listed.json()["error"]["code"] == "workspace_not_found"
    assert undone.status_code == 404
    assert undone.json()["error"]["code"] == "batch_not_found"
