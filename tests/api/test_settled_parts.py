"""A card a human settles after its run paused or ended says so: a decided approval's
continuation announces the part first (`part_update`), and an applied or rejected proposal
batch rewrites its stored parts, so a reload no longer says "Not applied yet"."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from app.settings import Settings
from tests.api.test_approvals import ADA, create, follow, say
from tests.fakes.db import ApiClient, MakeApi


@pytest.fixture
async def client(make_api: MakeApi, app_settings: Settings) -> AsyncIterator[ApiClient]:
    async with make_api(app_settings.model_copy(update={"example_tools_enabled": True})) as api:
        yield api


async def _cards(client: ApiClient, cid: str, name: str) -> list[dict[str, Any]]:
    messages = (await client.get(f"/api/conversations/{cid}")).json()["messages"]
    return [
        p
        for m in messages
        if m["role"] == "assistant" and isinstance(m["content"], list)
        for p in m["content"]
        if p["type"] == "tool" and p["data"]["toolName"] == name
    ]


async def test_the_run_after_a_decision_starts_with_the_decided_part(client: ApiClient) -> None:
    cid = await create(client)
    await say(client, cid, ADA)
    frames = await say(client, cid, "delete Ada Lovelace")
    confirm = next(f for f in frames if f.event == "confirm_required").data
    paused_message = confirm["message_id"]
    assert confirm["part"]["data"]["approvalId"] == confirm["approval_id"]

    decided = await client.post(
        f"/api/approvals/{confirm['approval_id']}", json={"decision": "approve"}
    )
    events = await follow(client, decided.json()["events_url"])

    assert [f.event for f in events[:2]] == ["run_start", "part_update"]
    update = events[1].data
    assert update["cause"] == "approval_approved"
    assert update["message_id"] == paused_message
    assert update["part"]["id"] == confirm["part"]["id"]
    assert update["part"]["data"]["status"] == "success"
    [stored] = await _cards(client, cid, "delete_node")
    assert stored == update["part"]


async def test_an_applied_batch_rewrites_its_receipts(client: ApiClient) -> None:
    cid = await create(client, mode="propose")
    await say(client, cid, ADA)
    before = await _cards(client, cid, "add_node")
    assert all("Not applied yet" in c["data"]["result"]["note"] for c in before)

    applied = await client.post(f"/api/conversations/{cid}/proposals/approve")
    assert applied.status_code == 200, applied.text

    after = await _cards(client, cid, "add_node")
    assert [c["data"]["status"] for c in after] == ["success", "success"]
    assert all(c["data"]["result"]["applied"] is True for c in after)
    assert all("Not applied yet" not in c["data"]["result"]["note"] for c in after)
    assert sorted(c["data"]["result"]["result"]["name"] for c in after) == [
        "Ada Lovelace",
        "Analytical Engine",
    ]


async def test_a_rejected_batch_marks_its_cards_cancelled(client: ApiClient) -> None:
    cid = await create(client, mode="propose")
    await say(client, cid, ADA)

    rejected = await client.post(f"/api/conversations/{cid}/proposals/reject", json={})
    assert rejected.status_code == 200, rejected.text

    cards = await _cards(client, cid, "add_node") + await _cards(client, cid, "connect")
    assert [c["data"]["status"] for c in cards] == ["cancelled"] * 3
    assert all(c["data"]["result"]["rejected"] is True for c in cards)
