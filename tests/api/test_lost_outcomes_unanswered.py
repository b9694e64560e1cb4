"""A card whose approval outcome an outage lost is settled though nobody answers it again:
reading the conversation, following it in a tab, or a typed decision closes the call as an
error saying it may or may not have run (what a decision sent again would have written),
once the attempt that decided it can no longer be running. It waited for ever until some
answer came."""

from __future__ import annotations

import json

import httpx
import pytest
from httpx_sse import aconnect_sse

from tests.api.test_approval_retries import (
    _assistant_messages,
    _decide,
    _outcome_lost,
    _outcome_lost_now,
    _the_call,
    client,
)
from tests.api.test_approvals import node_names, say
from tests.fakes.db import ApiClient
from tests.support.loopback import served

__all__ = ["client"]


async def _approval(client: ApiClient, approval_id: str) -> tuple[str, str | None]:
    approval = (await client.get(f"/api/approvals/{approval_id}")).json()
    return approval["status"], approval["outcome"]


async def test_reading_the_conversation_settles_a_card_whose_outcome_was_lost(
    client: ApiClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    cid, approval_id = await _outcome_lost(client, monkeypatch)

    call = await _the_call(client, cid, approval_id)

    assert call["data"]["status"] == "error"
    assert "may or may not have run" in call["data"]["bodyContent"]
    assert await _approval(client, approval_id) == ("approved", "error")
    detail = (await client.get(f"/api/conversations/{cid}")).json()
    assert detail["active_run_id"] is None
    assert await node_names(client) == ["Analytical Engine"]  # the delete never ran twice
    retried = (await _decide(client, approval_id, 409, decision="approve"))["error"]
    assert retried["run_id"] is not None  # the decision sent later still continues it


@pytest.mark.parametrize("reply", ["yes", "no"])
async def test_a_typed_decision_settles_a_card_whose_outcome_was_lost(
    client: ApiClient, monkeypatch: pytest.MonkeyPatch, reply: str
) -> None:
    """A typed "yes" (or "no") is the decision sent again: it settles the card as
    POST /api/approvals would, and the model reads the reply with the call closed."""
    cid, approval_id = await _outcome_lost(client, monkeypatch)

    frames = await say(client, cid, reply)

    assert frames[-1].data["status"] == "completed"
    async with client.services.db.read() as tx:
        approval = await tx.approvals.get(client.services.settings.local_user_id, approval_id)
    assert approval.outcome_status == "error"
    call = await _the_call(client, cid, approval_id)
    assert call["data"]["status"] == "error"
    assert "may or may not have run" in call["data"]["bodyContent"]
    assert await node_names(client) == ["Analytical Engine"]


async def test_a_card_whose_decision_may_still_be_running_is_left_waiting(
    client: ApiClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    cid, approval_id = await _outcome_lost_now(client, monkeypatch)
    answers = await _assistant_messages(client, cid)

    call = await _the_call(client, cid, approval_id)

    assert call["data"]["status"] == "waitingConfirmation"
    assert await _approval(client, approval_id) == ("approved", None)
    assert await _assistant_messages(client, cid) == answers


async def test_a_tab_following_the_conversation_sees_the_lost_card_settled(
    client: ApiClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    cid, approval_id = await _outcome_lost(client, monkeypatch)

    async with (
        served(client.app) as base,
        httpx.AsyncClient(base_url=base, timeout=10) as http,
        aconnect_sse(http, "GET", f"/api/conversations/{cid}/events") as source,
    ):
        update = await anext(
            json.loads(e.data) async for e in source.aiter_sse() if e.event == "part_update"
        )

    assert update["part"]["data"]["approvalId"] == approval_id
    assert update["part"]["data"]["status"] == "error"
    assert "may or may not have run" in update["part"]["data"]["bodyContent"]
