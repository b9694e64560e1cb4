"""A decision sent again while the conversation is busy names the run that continues the
call, never whichever run is active: when the conversation went on with a new user message
after an outage kept the decided call from continuing, no run continues that call, and the
409 says so (`moved_on`) with no `run_id`."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from app.providers.scripted import ScriptedProvider, ScriptedTurn, load_script
from app.settings import Settings
from app.store.repos.messages import MessageRepo
from tests.api.test_approval_retries import _decide
from tests.api.test_approvals import waiting_delete
from tests.fakes.db import ApiClient, MakeApi
from tests.support.lost_database import lose_connection_in


@pytest.fixture
async def client(make_api: MakeApi, app_settings: Settings) -> AsyncIterator[ApiClient]:
    script = load_script(None)
    # A model that has not begun to answer yet: the conversation stays busy with this run.
    script.turns.insert(0, ScriptedTurn(match="^hold on", text="Later.", stall_seconds=120))
    settings = app_settings.model_copy(update={"example_tools_enabled": True})
    async with make_api(settings, providers={"scripted": ScriptedProvider(script)}) as api:
        yield api


async def test_a_decision_again_while_a_new_message_runs_names_no_run_of_it(
    client: ApiClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    cid, approval_id = await waiting_delete(client)
    with monkeypatch.context() as outage:
        # The decision commits and the tool runs; reading the history to continue fails.
        lose_connection_in(outage, MessageRepo, "history", times=1)
        refused = await client.post(f"/api/approvals/{approval_id}", json={"decision": "approve"})
    assert refused.status_code == 503, refused.text
    sent = await client.post(f"/api/conversations/{cid}/messages", json={"content": "hold on"})
    assert sent.status_code == 202, sent.text
    busy = sent.json()["run_id"]

    try:
        retried = (await _decide(client, approval_id, 409, decision="approve"))["error"]
    finally:
        await client.post(f"/api/conversations/{cid}/runs/{busy}/cancel")

    assert (retried["code"], retried["decision"]) == ("already_decided", "approved")
    assert (retried["run_id"], retried["events_url"]) == (None, None)
    assert retried["moved_on"] is True
