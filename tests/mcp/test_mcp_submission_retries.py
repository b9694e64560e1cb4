"""An answer to a tool's question is safe to retry: `POST …/submissions/{toolCallId}` sent
again is 409 `already_answered` (a second answer never calls the tool), and when it is the
answer given the 409 names the run that continues the conversation, which continues at
most once; an outage after the answer committed is a 503 to retry, not a 200 that leaves
the conversation waiting for ever."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import select

from app.store.repos.messages import MessageRepo
from app.store.tables.core import AuditRow
from tests.api.test_approvals import _ok
from tests.fakes.db import ApiClient
from tests.mcp.test_mcp_elicitation import ALICE, _asked, _follow, _submission, client
from tests.support.lost_database import lose_connection_in

__all__ = ["client"]  # the fixture: an app whose MCP server asks before removing a file

ACCEPT = {"action": "accept", "content": {"confirm": True, "reason": "old"}}


async def _answer(client: ApiClient, cid: str, call_id: str, status: int, body: Any) -> Any:
    response = await client.post(_submission(cid, call_id), json=body, headers=ALICE)
    assert response.status_code == status, response.text
    return response.json()


async def _assistant_messages(client: ApiClient, cid: str) -> int:
    detail = await _ok(await client.get(f"/api/conversations/{cid}", headers=ALICE))
    return sum(m["role"] == "assistant" for m in detail["messages"])


async def _answers_audited(client: ApiClient) -> list[str]:
    """One audit record per time the tool was called again with an answer."""
    async with client.services.db.sessions() as s:
        rows = await s.scalars(select(AuditRow).where(AuditRow.target_type == "elicitation"))
        return [r.action for r in rows.all()]


async def test_an_outage_after_the_answer_is_a_503_and_the_same_answer_again_continues(
    client: ApiClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    cid, call_id, _ = await _asked(client)
    answers = await _assistant_messages(client, cid)

    with monkeypatch.context() as outage:
        # The answer commits and the tool finishes; reading the history to continue fails.
        lose_connection_in(outage, MessageRepo, "history", times=1)
        refused = await client.post(_submission(cid, call_id), json=ACCEPT, headers=ALICE)

    assert refused.status_code == 503, refused.text
    assert refused.json()["error"]["code"] == "database_unavailable"
    assert int(refused.headers["Retry-After"]) >= 1
    assert await _assistant_messages(client, cid) == answers  # the conversation waits

    retried = (await _answer(client, cid, call_id, 409, ACCEPT))["error"]

    assert (retried["code"], retried["action"]) == ("already_answered", "accept")
    assert retried["run_id"] is not None
    resumed = await _follow(client, retried["events_url"])
    assert resumed[-1].data["status"] == "completed"
    again = (await _answer(client, cid, call_id, 409, ACCEPT))["error"]
    assert again["run_id"] == retried["run_id"]
    assert await _assistant_messages(client, cid) == answers + 1
    assert await _answers_audited(client) == ["elicitation.accept"]


@pytest.mark.parametrize(
    "other",
    [
        {"action": "accept", "content": {"confirm": True, "reason": "another reason"}},
        {"action": "decline"},
        {"action": "cancel"},
    ],
)
async def test_an_answer_again_is_409_naming_the_run_only_when_it_is_the_one_given(
    client: ApiClient, other: dict[str, Any]
) -> None:
    cid, call_id, _ = await _asked(client)
    first = await _answer(client, cid, call_id, 200, ACCEPT)
    await _follow(client, first["events_url"])
    answers = await _assistant_messages(client, cid)

    again = (await _answer(client, cid, call_id, 409, ACCEPT))["error"]
    refused = (await _answer(client, cid, call_id, 409, other))["error"]

    assert (again["code"], again["action"]) == ("already_answered", "accept")
    assert (again["run_id"], again["events_url"]) == (first["run_id"], first["events_url"])
    assert (refused["code"], refused["action"]) == ("already_answered", "accept")
    assert "run_id" not in refused
    assert await _assistant_messages(client, cid) == answers
    assert await _answers_audited(client) == ["elicitation.accept"]
