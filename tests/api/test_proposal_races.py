"""An approve and a reject of one proposal queue sent at once (two tabs, or a double click
on both buttons) settle each proposal one way: what the approve applied is not also
answered as rejected, and its tool card is not marked "nothing was applied". On Postgres
the reject read the queue before the approve committed, found its UPDATE moved nothing
after it, and still answered every id as rejected and rewrote the applied cards."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from app.settings import Settings
from tests.api.test_approvals import ADA, create, say
from tests.fakes.db import ApiClient, MakeApi

TRIES = 6


@pytest.fixture
async def client(make_api: MakeApi, app_settings: Settings) -> AsyncIterator[ApiClient]:
    settings = app_settings.model_copy(update={"example_tools_enabled": True})
    async with make_api(settings) as api:
        yield api


def _cards(detail: dict[str, Any]) -> dict[str, Any]:
    """Proposal id -> the result its tool card shows."""
    cards: dict[str, Any] = {}
    for message in detail["messages"]:
        if not isinstance(message["content"], list):
            continue
        for part in message["content"]:
            result = part["data"].get("result") if part["type"] == "tool" else None
            if isinstance(result, dict) and "proposal_id" in result:
                cards[result["proposal_id"]] = part["data"]
    return cards


async def test_an_approve_and_a_reject_at_once_settle_each_proposal_one_way(
    client: ApiClient,
) -> None:
    for _ in range(TRIES):
        cid = await create(client, mode="propose")
        await say(client, cid, ADA)
        queued = [
            p["id"]
            for p in (await client.get(f"/api/conversations/{cid}/proposals")).json()["data"]
        ]

        approved, rejected = await asyncio.gather(
            client.post(f"/api/conversations/{cid}/proposals/approve"),
            client.post(f"/api/conversations/{cid}/proposals/reject"),
        )
        detail = (await client.get(f"/api/conversations/{cid}")).json()

        assert approved.status_code in (200, 409), approved.text
        assert rejected.status_code in (200, 409), rejected.text
        applied = set()
        if approved.status_code == 200:
            applied = {c["proposal_id"] for c in approved.json()["applied"]}
        dropped = set(rejected.json()["rejected"]) if rejected.status_code == 200 else set()
        assert not applied & dropped, (approved.text, rejected.text)
        cards = _cards(detail)
        for proposal_id in queued:
            shown = cards[proposal_id]
            if proposal_id in applied:
                assert shown["status"] == "success", shown
            if proposal_id in dropped:
                assert shown["status"] == "cancelled", shown
