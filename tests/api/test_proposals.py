"""Proposal queues through the API: a propose-mode conversation queues every write, the
human applies the queue atomically or drops it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from sqlalchemy import select

from app.examples.graph.tables import GraphEdgeRow, GraphNodeRow
from app.settings import Settings
from app.store.repos import ConversationRepo
from app.store.tables.core import AuditRow
from tests.api.test_approvals import ADA, create, node_names, say
from tests.fakes.db import ApiClient, MakeApi


@pytest.fixture
async def client(make_api: MakeApi, app_settings: Settings) -> AsyncIterator[ApiClient]:
    settings = app_settings.model_copy(update={"example_tools_enabled": True})
    async with make_api(settings) as api:
        yield api


async def _ok(response: Any, status: int = 200) -> Any:
    assert response.status_code == status, response.text
    return response.json()


def _url(cid: str, action: str = "") -> str:
    return f"/api/conversations/{cid}/proposals{action}"


async def test_propose_mode_queues_the_demo_and_approval_applies_it_atomically(
    client: ApiClient,
) -> None:
    cid = await create(client, mode="propose")

    frames = await say(client, cid, ADA)

    receipts = [f.data["part"]["data"]["result"] for f in frames if f.event == "tool_end"]
    assert [r["proposed"] for r in receipts] == [True, True, True]
    assert sorted(r["queued"] for r in receipts) == [1, 2, 3]
    assert receipts[0]["provisional_id"].startswith("prov_")
    assert await node_names(client) == []
    queue = (await _ok(await client.get(_url(cid))))["data"]
    assert [p["tool_name"] for p in queue] == ["add_node", "add_node", "connect"]
    assert queue[0]["args"] == {"label": "Person", "name": "Ada Lovelace", "properties": {}}
    assert queue[0]["model"] == "scripted"

    batch = await _ok(await client.post(_url(cid, "/approve")))

    assert [c["tool_name"] for c in batch["applied"]] == ["add_node", "add_node", "connect"]
    assert batch["applied"][0]["real_id"].startswith("node_")
    assert await node_names(client) == ["Ada Lovelace", "Analytical Engine"]
    async with client.services.db.sessions() as s:
        assert [e.relation for e in await s.scalars(select(GraphEdgeRow))] == ["designed"]
        audit = await s.get(AuditRow, batch["audit_id"])
    assert audit is not None and audit.details is not None
    assert audit.details["proposed_by"]["conversation_id"] == cid
    assert audit.details["approved_by"] == client.services.settings.local_user_id
    assert (await _ok(await client.get(_url(cid))))["data"] == []


async def test_a_failing_proposal_is_409_and_nothing_is_applied(client: ApiClient) -> None:
    cid = await create(client, mode="propose")
    await say(client, cid, ADA)
    await say(client, cid, "propose a birth year for Ada")  # set_property on Ada Lovelace
    queue = (await _ok(await client.get(_url(cid))))["data"]
    first_node = queue[0]["id"]
    # Drop the node that set_property and connect rely on: both go stale.
    await _ok(await client.post(_url(cid, "/reject"), json={"ids": [first_node]}))

    response = await client.post(_url(cid, "/approve"))

    assert response.status_code == 409
    error = response.json()["error"]
    assert error["code"] == "proposal_failed"
    assert error["proposal_id"] == queue[2]["id"]  # connect, the first to need Ada
    assert "Ada Lovelace" in error["reason"]
    assert await node_names(client) == []
    assert len((await _ok(await client.get(_url(cid))))["data"]) == 3


async def test_a_propose_policy_tool_queues_even_in_an_auto_conversation(
    client: ApiClient,
) -> None:
    cid = await create(client)
    await say(client, cid, ADA)

    frames = await say(client, cid, "propose a birth year for Ada")

    result = next(f for f in frames if f.event == "tool_end").data["part"]["data"]["result"]
    assert result["proposed"] is True
    batch = await _ok(await client.post(_url(cid, "/approve"), json={}))
    assert batch["applied"][0]["result"]["properties"] == {"born": 1815}


async def test_reject_drops_the_given_ids_or_everything(client: ApiClient) -> None:
    cid = await create(client, mode="propose")
    await say(client, cid, ADA)
    queue = (await _ok(await client.get(_url(cid))))["data"]

    some = await _ok(await client.post(_url(cid, "/reject"), json={"ids": [queue[2]["id"]]}))
    rest = await _ok(await client.post(_url(cid, "/reject")))

    assert some["rejected"] == [queue[2]["id"]]
    assert sorted(rest["rejected"]) == sorted(p["id"] for p in queue[:2])
    assert (await _ok(await client.get(_url(cid))))["data"] == []
    assert await node_names(client) == []


async def test_unknown_ids_are_404_and_unknown_fields_422(client: ApiClient) -> None:
    cid = await create(client, mode="propose")

    missing = await client.post(_url(cid, "/approve"), json={"ids": ["prop_nope"]})
    smuggled = await client.post(_url(cid, "/approve"), json={"owner_id": "x"})

    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == "proposal_not_found"
    assert smuggled.status_code == 422


async def test_another_users_queue_is_not_found(client: ApiClient) -> None:
    async with client.services.db.sessions.begin() as s:
        foreign = (await ConversationRepo(s).create("someone-else", mode="propose")).id

    for method, action in (("GET", ""), ("POST", "/approve"), ("POST", "/reject")):
        response = await client.request(method, _url(foreign, action))
        assert response.status_code == 404, (method, action)
    async with client.services.db.sessions() as s:
        assert (await s.scalars(select(GraphNodeRow))).all() == []


@pytest.mark.parametrize("action", ["/approve", "/reject"])
@pytest.mark.parametrize(
    ("pick", "problem"),
    [
        (lambda queue: [], "should have at least 1 item"),
        (lambda queue: [queue[0]["id"], queue[0]["id"]], "names a proposal more than once"),
        (lambda queue: [""], "at least 1 character"),
    ],
    ids=["empty", "repeated", "blank"],
)
async def test_an_empty_or_repeating_id_list_is_422_and_leaves_the_queue(
    client: ApiClient,
    action: str,
    pick: Callable[[list[dict[str, Any]]], list[str]],
    problem: str,
) -> None:
    cid = await create(client, mode="propose")
    await say(client, cid, ADA)
    queue = (await _ok(await client.get(_url(cid))))["data"]

    refused = await _ok(await client.post(_url(cid, action), json={"ids": pick(queue)}), 422)

    assert refused["error"]["code"] == "validation_error"
    assert refused["error"]["param"].startswith("ids")
    assert problem in refused["error"]["message"]
    assert (await _ok(await client.get(_url(cid))))["data"] == queue
    assert await node_names(client) == []
