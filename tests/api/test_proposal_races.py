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
from tests.api.test_approvals import ADA, create, node_names, say
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


async def _queued(client: ApiClient) -> tuple[str, list[str]]:
    """A propose-mode conversation whose queue holds the demo's three proposals."""
    cid = await create(client, mode="propose")
    await say(client, cid, ADA)
    queue = (await client.get(f"/api/conversations/{cid}/proposals")).json()["data"]
    return cid, [p["id"] for p in queue]


async def test_an_approve_and_a_reject_at_once_settle_each_proposal_one_way(
    client: ApiClient,
) -> None:
    for _ in range(TRIES):
        cid, queued = await _queued(client)

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


@pytest.mark.parametrize("chosen", [False, True], ids=["whole queue", "named ids"])
async def test_of_two_approves_at_once_one_applies_and_the_other_is_409(
    client: ApiClient, chosen: bool
) -> None:
    """The loser of two approves sent at once (a double click, two tabs) is told the queue
    changed, on SQLite as on Postgres: it was a 200 with nothing applied on SQLite (the
    loser read the queue after the winner committed), which a client shows as success."""
    for _ in range(TRIES):
        cid, queued = await _queued(client)
        body = {"ids": queued} if chosen else None

        answers = await asyncio.gather(
            *(client.post(f"/api/conversations/{cid}/proposals/approve", json=body) for _ in "ab")
        )

        codes = sorted(a.status_code for a in answers)
        assert codes == [200, 409], [a.text for a in answers]
        won = next(a for a in answers if a.status_code == 200).json()
        lost = next(a for a in answers if a.status_code == 409).json()
        assert sorted(c["proposal_id"] for c in won["applied"]) == sorted(queued)
        assert lost["error"]["code"] == "proposals_changed"
    names = await node_names(client)
    assert names == sorted(["Ada Lovelace", "Analytical Engine"] * TRIES)


async def test_of_two_rejects_at_once_one_drops_the_queue_and_the_other_is_409(
    client: ApiClient,
) -> None:
    """As for approves: the loser was a 200 dropping nothing on SQLite, a 409 on Postgres."""
    for _ in range(TRIES):
        cid, queued = await _queued(client)

        answers = await asyncio.gather(
            *(client.post(f"/api/conversations/{cid}/proposals/reject") for _ in "ab")
        )

        assert sorted(a.status_code for a in answers) == [200, 409], [a.text for a in answers]
        won = next(a for a in answers if a.status_code == 200).json()
        lost = next(a for a in answers if a.status_code == 409).json()
        assert sorted(won["rejected"]) == sorted(queued)
        assert lost["error"]["code"] == "proposals_changed"


async def test_of_an_approve_and_a_reject_at_once_the_loser_is_409(client: ApiClient) -> None:
    """Whichever settles the queue first, the other is told it changed, on SQLite as on
    Postgres: a reject that lost to the approve was a 200 rejecting nothing on SQLite (it
    read the queue after the approve committed), which a client shows as rejected while
    every proposal was applied."""
    for _ in range(TRIES):
        cid, _ = await _queued(client)

        answers = await asyncio.gather(
            client.post(f"/api/conversations/{cid}/proposals/approve"),
            client.post(f"/api/conversations/{cid}/proposals/reject"),
        )

        assert sorted(a.status_code for a in answers) == [200, 409], [a.text for a in answers]
        lost = next(a for a in answers if a.status_code == 409).json()
        assert lost["error"]["code"] == "proposals_changed"
        pending = (await client.get(f"/api/conversations/{cid}/proposals")).json()["data"]
        assert pending == []
