"""Approvals through the API: the offline demo asks before `delete_node` runs, a human
decides through `POST /api/approvals/{id}`, and the conversation continues."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from sqlalchemy import select

from app.domain.identity import Caller
from app.domain.parts import tool_part
from app.domain.tooling import ApprovalNeeded, RunContext
from app.examples.graph.tables import GraphEdgeRow, GraphNodeRow
from app.settings import Settings
from app.store.repos import ConversationRepo
from tests.api.sse_frames import Frame, parse
from tests.fakes.db import ApiClient, MakeApi

ADA = (
    "add a Person node named Ada Lovelace and connect her to the Analytical Engine "
    "with a designed relation"
)


@pytest.fixture
def demo_settings(app_settings: Settings) -> Settings:
    return app_settings.model_copy(update={"example_tools_enabled": True})


@pytest.fixture
async def client(make_api: MakeApi, demo_settings: Settings) -> AsyncIterator[ApiClient]:
    async with make_api(demo_settings) as api:
        yield api


async def _ok(response: Any, status: int = 200) -> Any:
    assert response.status_code == status, response.text
    return response.json()


async def create(client: ApiClient, **body: Any) -> str:
    created = await _ok(await client.post("/api/conversations", json=body), 201)
    conversation_id: str = created["id"]
    return conversation_id


async def say(client: ApiClient, cid: str, text: str) -> list[Frame]:
    """Send a message and read its run's events to the end."""
    started = await _ok(
        await client.post(f"/api/conversations/{cid}/messages", json={"content": text}), 202
    )
    return await follow(client, started["events_url"])


async def follow(client: ApiClient, url: str) -> list[Frame]:
    response = await client.get(url)
    assert response.status_code == 200, response.text
    frames = parse(response.text)
    assert frames[-1].event == "run_end"
    return frames


async def waiting_delete(client: ApiClient) -> tuple[str, str]:
    """A conversation whose run waits for a human to approve deleting Ada; its approval."""
    cid = await create(client)
    await say(client, cid, ADA)
    frames = await say(client, cid, "delete Ada Lovelace")
    assert frames[-1].data["status"] == "requires_action"
    approval_id = next(f for f in frames if f.event == "confirm_required").data["approval_id"]
    return cid, approval_id


async def node_names(client: ApiClient) -> list[str]:
    async with client.services.db.sessions() as s:
        return sorted(n.name for n in await s.scalars(select(GraphNodeRow)))


async def test_the_offline_demo_builds_the_graph_with_tool_cards(client: ApiClient) -> None:
    cid = await create(client)

    frames = await say(client, cid, ADA)

    ends = [f.data["part"] for f in frames if f.event == "tool_end"]
    assert [(p["data"]["toolName"], p["data"]["args"].get("name")) for p in ends] == [
        ("add_node", "Ada Lovelace"),
        ("add_node", "Analytical Engine"),
        ("connect", None),
    ]
    assert all(f.data["mutates"] for f in frames if f.event == "tool_end")
    assert ends[2]["data"]["result"]["relation"] == "designed"
    assert frames[-1].data["status"] == "completed"
    assert "designed" in "".join(f.data["delta"] for f in frames if f.event == "text_delta")
    assert await node_names(client) == ["Ada Lovelace", "Analytical Engine"]


async def test_delete_waits_for_a_human_then_runs_once_and_the_conversation_continues(
    client: ApiClient,
) -> None:
    cid = await create(client)
    await say(client, cid, ADA)

    frames = await say(client, cid, "delete Ada Lovelace")

    confirm = next(f for f in frames if f.event == "confirm_required")
    assert confirm.data["part"]["data"]["status"] == "waitingConfirmation"
    assert confirm.data["summary"] == "Delete the node 'Ada Lovelace' and all its edges"
    assert frames[-1].data["status"] == "requires_action"
    assert await node_names(client) == ["Ada Lovelace", "Analytical Engine"]
    inbox = await _ok(await client.get("/api/approvals"))
    assert [a["id"] for a in inbox["data"]] == [confirm.data["approval_id"]]
    assert inbox["data"][0]["args"] == {"id": "Ada Lovelace"}

    decided = await _ok(
        await client.post(
            f"/api/approvals/{confirm.data['approval_id']}", json={"decision": "approve"}
        )
    )

    assert decided["approval"]["status"] == "approved"
    assert decided["part"]["data"]["status"] == "success"
    assert decided["part"]["data"]["result"]["name"] == "Ada Lovelace"
    assert await node_names(client) == ["Analytical Engine"]
    async with client.services.db.sessions() as s:
        assert (await s.scalars(select(GraphEdgeRow))).all() == []
    assert decided["run_id"] is not None
    resumed = await follow(client, decided["events_url"])
    assert resumed[-1].data["status"] == "completed"
    assert (await _ok(await client.get("/api/approvals")))["data"] == []

    again = await client.post(
        f"/api/approvals/{confirm.data['approval_id']}", json={"decision": "approve"}
    )
    assert again.status_code == 409
    assert again.json()["error"]["code"] == "already_decided"


async def test_a_rejection_is_the_tool_result_and_the_model_answers(client: ApiClient) -> None:
    cid = await create(client)
    await say(client, cid, ADA)
    frames = await say(client, cid, "delete Ada Lovelace")
    approval_id = next(f for f in frames if f.event == "confirm_required").data["approval_id"]

    decided = await _ok(
        await client.post(
            f"/api/approvals/{approval_id}", json={"decision": "reject", "reason": "keep her"}
        )
    )

    assert decided["part"]["data"]["status"] == "error"
    assert decided["part"]["data"]["result"] == {
        "error": "rejected by the user",
        "reason": "keep her",
    }
    await follow(client, decided["events_url"])
    assert await node_names(client) == ["Ada Lovelace", "Analytical Engine"]
    detail = await _ok(await client.get(f"/api/conversations/{cid}"))
    assert detail["messages"][-1]["role"] == "assistant"


async def test_invalid_edited_arguments_are_422_and_the_approval_stays_pending(
    client: ApiClient,
) -> None:
    cid = await create(client)
    frames = await say(client, cid, "delete Ada Lovelace")
    approval_id = next(f for f in frames if f.event == "confirm_required").data["approval_id"]

    response = await client.post(
        f"/api/approvals/{approval_id}",
        json={"decision": "approve", "args": {"id": "x", "cascade": True}},
    )

    assert response.status_code == 422
    assert response.json()["error"]["code"] == "invalid_arguments"
    assert [a["id"] for a in (await _ok(await client.get("/api/approvals")))["data"]] == [
        approval_id
    ]


async def test_unknown_fields_in_the_decision_are_refused(client: ApiClient) -> None:
    response = await client.post(
        "/api/approvals/appr_x", json={"decision": "approve", "owner_id": "local"}
    )

    assert response.status_code == 422


async def test_another_users_approval_is_not_found_and_not_in_the_inbox(
    client: ApiClient,
) -> None:
    async with client.services.db.sessions.begin() as s:
        foreign = (await ConversationRepo(s).create("someone-else")).id
    needed = await client.services.tools.invoke(
        tool_part(tool_call_id="c1", tool_name="delete_node", status="loading", args={"id": "x"}),
        RunContext(caller=Caller(user_id="someone-else"), run_id="run_x", conversation_id=foreign),
    )
    assert isinstance(needed, ApprovalNeeded)

    for path in (f"/api/approvals/{needed.approval_id}", "/api/approvals/appr_unknown"):
        response = await client.post(path, json={"decision": "approve"})
        assert response.status_code == 404
        assert response.json()["error"]["code"] == "approval_not_found"
    assert (await _ok(await client.get("/api/approvals")))["data"] == []


async def test_a_pending_approval_can_be_decided_after_a_restart(
    make_api: MakeApi, demo_settings: Settings
) -> None:
    async with make_api(demo_settings) as before:
        cid = await create(before, mode="auto")
        await say(before, cid, ADA)
        frames = await say(before, cid, "delete Ada Lovelace")
        approval_id = next(f for f in frames if f.event == "confirm_required").data["approval_id"]

    async with make_api(demo_settings) as after:
        decided = await _ok(
            await after.post(f"/api/approvals/{approval_id}", json={"decision": "approve"})
        )
        await follow(after, decided["events_url"])
        assert await node_names(after) == ["Analytical Engine"]


async def test_the_tools_list_shows_what_the_caller_may_use(client: ApiClient) -> None:
    tools = {t["name"]: t for t in (await _ok(await client.get("/api/tools")))["data"]}

    assert tools["delete_node"]["policy"] == "confirm"
    assert tools["add_node"]["mutates"] is True
    assert tools["find_nodes"]["mutates"] is False
    assert tools["set_property"]["policy"] == "propose"
    assert "user_id" not in tools["add_node"]["parameters"]["properties"]
    assert tools["add_node"]["parameters"]["additionalProperties"] is False


async def test_without_server_tools_the_lists_are_empty(
    make_api: MakeApi, app_settings: Settings
) -> None:
    async with make_api(app_settings) as client:
        assert (await _ok(await client.get("/api/tools")))["data"] == []
        assert (await _ok(await client.get("/api/approvals")))["data"] == []
