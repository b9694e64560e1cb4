"""A server asking the user mid-call, seen through the Responses wire with the openai SDK:
the call is only an `mcp_submission_request` item (the one shape AIKit 2.2 shows as
`waitingSubmission`), never a loading `mcp_call` beside it; answered, the conversation's
next response and its items show the finished `mcp_call`."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import openai
import pytest

from app.providers.scripted import ScriptedProvider
from app.settings import Settings
from tests.api.test_approvals import _ok
from tests.fakes.db import ApiClient, MakeApi
from tests.mcp.conftest import HttpServer
from tests.mcp.test_mcp_elicitation import ALICE, SCHEMA, SCRIPT, _settings
from tests.support.openai_users import openai_as


@pytest.fixture
async def client(
    make_api: MakeApi, app_settings: Settings, http_server: HttpServer
) -> AsyncIterator[ApiClient]:
    settings = _settings(app_settings, http_server)
    async with make_api(settings, providers={"scripted": ScriptedProvider(SCRIPT)}) as api:
        yield api


@pytest.fixture
async def alice(client: ApiClient) -> AsyncIterator[openai.AsyncOpenAI]:
    async with openai_as(client, "alice") as sdk:
        yield sdk


def _raw(item: Any) -> dict[str, Any]:
    """An item as it came over the wire (the SDK keeps fields of item types it lacks)."""
    dumped: dict[str, Any] = item.model_dump()
    return dumped


async def test_a_question_is_only_a_submission_request_and_its_answer_a_finished_call(
    client: ApiClient, alice: openai.AsyncOpenAI
) -> None:
    conversation = await alice.conversations.create()
    stream = await alice.responses.create(
        model="scripted", input="remove it", conversation=conversation.id, stream=True
    )
    events = [e async for e in stream]

    assert not any(e.type.startswith("response.mcp_call") for e in events)
    added = [_raw(e.item) for e in events if e.type == "response.output_item.added"]
    [asked] = added
    assert asked["type"] == "mcp_submission_request"
    assert (asked["name"], json.loads(asked["arguments"])) == ("web__remove", {"path": "a.txt"})
    assert asked["message"] == "Remove a.txt? Say why."
    assert asked["requested_schema"] == SCHEMA
    assert events[-1].type == "response.completed"
    # The stored history says the same.
    items = (await alice.conversations.items.list(conversation.id, order="asc")).data
    tools = [_raw(i) for i in items if i.type != "message"]
    assert [(t["type"], t["id"]) for t in tools] == [("mcp_submission_request", asked["id"])]

    answered = await _ok(
        await client.post(
            f"/api/conversations/{conversation.id}/submissions/{asked['id']}",
            json={"action": "accept", "content": {"confirm": True, "reason": "old"}},
            headers=ALICE,
        )
    )
    run_id: str = answered["events_url"].split("/runs/")[1].split("/")[0]
    resumed = await alice.responses.retrieve("resp_" + run_id.removeprefix("run_"))
    if resumed.status == "in_progress":  # the answer's run may still be going: follow it
        async for _ in await alice.responses.retrieve(resumed.id, stream=True):
            pass
        resumed = await alice.responses.retrieve(resumed.id)

    call = _raw(resumed.output[0])
    assert (call["type"], call["id"], call["status"]) == ("mcp_call", asked["id"], "completed")
    assert "removed" in (call["output"] or "")
    items = (await alice.conversations.items.list(conversation.id, order="asc")).data
    tools = [_raw(i) for i in items if i.type != "message"]
    assert [(t["type"], t["id"], t["status"]) for t in tools] == [
        ("mcp_call", asked["id"], "completed")
    ]
