"""A decision whose outcome an outage lost is settled by the next decision sent to it on
any path, not only the REST one: an `mcp_approval_response` on `/v1/responses` closes the
call as an error (it may or may not have run), never runs the tool again, and the
conversation goes on."""

from __future__ import annotations

import pytest

from tests.api.test_approval_retries import _outcome_lost, _the_call, client
from tests.api.test_approvals import node_names
from tests.fakes.db import ApiClient

__all__ = ["client"]


async def test_an_approval_response_settles_a_decision_whose_outcome_was_lost(
    client: ApiClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    cid, approval_id = await _outcome_lost(client, monkeypatch)
    answer = {"type": "mcp_approval_response", "approval_request_id": approval_id}

    response = await client.post(
        "/v1/responses",
        json={"conversation": cid, "input": [{**answer, "approve": True}]},
    )

    assert response.status_code == 200, response.text
    call = await _the_call(client, cid, approval_id)
    assert call["data"]["status"] == "error"
    assert await node_names(client) == ["Analytical Engine"]
    detail = (await client.get(f"/api/conversations/{cid}")).json()
    assert detail["messages"][-1]["role"] == "assistant"
    assert detail["active_run_id"] is None


async def test_another_answer_settles_the_lost_call_and_is_refused(
    client: ApiClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    cid, approval_id = await _outcome_lost(client, monkeypatch)
    answer = {"type": "mcp_approval_response", "approval_request_id": approval_id}

    response = await client.post(
        "/v1/responses",
        json={"conversation": cid, "input": [{**answer, "approve": False}]},
    )

    assert response.status_code == 409, response.text
    assert response.json()["error"]["code"] == "already_decided"
    assert (await _the_call(client, cid, approval_id))["data"]["status"] == "error"
