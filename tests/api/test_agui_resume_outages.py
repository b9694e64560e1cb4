"""An AG-UI `resume` input whose decisions committed but whose run an outage kept from
starting (a 503) continues the thread when the same input (same `threadId`, `runId` and
input) is sent again: a decision already taken as it asks is its own, not a second one.
Once the thread went on, the same input is refused as a second decision is."""

from __future__ import annotations

import pytest

from app.store.repos.messages import MessageRepo
from tests.api.test_agui import client, run, stored, text_of, types, user
from tests.api.test_approvals import node_names
from tests.fakes.db import ApiClient
from tests.support.lost_database import lose_connection_in

__all__ = ["client"]  # the fixture: the example graph tools and a scripted model


async def test_a_resume_whose_run_an_outage_kept_from_starting_starts_it_when_sent_again(
    client: ApiClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    await run(client, "t-outage", [user("add Ada")])
    asked = await run(client, "t-outage", [user("delete Ada")])
    [interrupt] = asked[-1]["outcome"]["interrupts"]
    resume = [{"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": True}}]
    body = {"threadId": "t-outage", "runId": "run-go", "messages": [user("delete Ada")]}
    with monkeypatch.context() as outage:
        # The decision commits and the tool runs; reading the history to continue fails.
        lose_connection_in(outage, MessageRepo, "history", times=1)
        refused = await client.post("/api/agui", json={**body, "resume": resume})
    assert refused.status_code == 503, refused.text
    assert await node_names(client) == []

    other = await run(client, "t-outage", [user("delete Ada")], resume=resume, status=409)
    retried = await run(client, "t-outage", [user("delete Ada")], resume=resume, run_id="run-go")

    assert other["error"]["code"] == "already_decided"  # another input: as before
    assert types(retried)[:2] == ["RUN_STARTED", "TOOL_CALL_RESULT"]
    assert retried[1]["toolCallId"] == interrupt["toolCallId"]
    assert text_of(retried) == "Decided." and retried[-1]["outcome"]["type"] == "success"
    again = await run(
        client, "t-outage", [user("delete Ada")], resume=resume, run_id="run-go", status=409
    )
    assert again["error"]["code"] == "already_decided"  # the thread went on: as before
    roles = [m["role"] for m in await stored(client, "t-outage")]
    assert roles == ["user", "assistant", "user", "assistant", "assistant"]
    assert await node_names(client) == []
