"""A server asking the user mid-call (elicitation as an `input_required` result): the part
waits with the question, the user answers through the API, and the call is retried with
the stored request state, on this instance or another one sharing the database."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from pydantic import SecretStr
from sqlalchemy import select

from app.providers.scripted import Script, ScriptedProvider, ScriptedToolCall, ScriptedTurn
from app.settings import Settings
from app.store.tables.core import AuditRow
from tests.api.sse_frames import Frame, parse
from tests.api.test_approvals import _ok
from tests.auth.tokens import HS_SECRET, bearer, hs_token
from tests.fakes.db import ApiClient, MakeApi
from tests.mcp.conftest import HttpServer

ALICE = bearer(hs_token(sub="alice"))
BOB = bearer(hs_token(sub="bob"))

SCRIPT = Script(
    mode="rules",
    turns=[
        ScriptedTurn(after_tool="web__remove", text="Done with the file."),
        ScriptedTurn(
            match="^remove",
            tool_calls=[ScriptedToolCall(name="web__remove", args={"path": "a.txt"})],
        ),
        ScriptedTurn(text="Hello."),
    ],
)
SCHEMA = {
    "type": "object",
    "properties": {
        "confirm": {"title": "Confirm", "type": "boolean"},
        "reason": {"title": "Reason", "type": "string"},
    },
    "required": ["confirm", "reason"],
}


def _settings(app_settings: Settings, http_server: HttpServer) -> Settings:
    servers = [{"name": "web", "transport": "streamable-http", "url": http_server.url}]
    return app_settings.model_copy(
        update={
            "mcp_servers": SecretStr(json.dumps(servers)),
            "jwt_secret": SecretStr(HS_SECRET),
        }
    )


@pytest.fixture
async def client(
    make_api: MakeApi, app_settings: Settings, http_server: HttpServer
) -> AsyncIterator[ApiClient]:
    settings = _settings(app_settings, http_server)
    async with make_api(settings, providers={"scripted": ScriptedProvider(SCRIPT)}) as api:
        yield api


async def _asked(client: ApiClient) -> tuple[str, str, list[Frame]]:
    """A conversation whose model called `web__remove`, which asked the user."""
    created = await _ok(await client.post("/api/conversations", json={}, headers=ALICE), 201)
    cid = created["id"]
    started = await _ok(
        await client.post(
            f"/api/conversations/{cid}/messages", json={"content": "remove it"}, headers=ALICE
        ),
        202,
    )
    frames = await _follow(client, started["events_url"])
    asked = next(f for f in frames if f.event == "confirm_required")
    return cid, asked.data["part"]["id"], frames


def _submission(cid: str, call_id: str) -> str:
    return f"/api/conversations/{cid}/submissions/{call_id}"


async def test_the_question_waits_in_the_part_and_an_accepted_answer_finishes_the_call(
    client: ApiClient,
) -> None:
    cid, call_id, frames = await _asked(client)

    asked = next(f for f in frames if f.event == "confirm_required")
    assert asked.data["kind"] == "input"
    part = asked.data["part"]["data"]
    assert part["status"] == "waitingSubmission"
    assert part["elicitation"]["message"] == "Remove a.txt? Say why."
    assert part["elicitation"]["requestedSchema"] == SCHEMA
    assert frames[-1].data["status"] == "requires_action"
    stored = await _ok(await client.get(f"/api/conversations/{cid}", headers=ALICE))
    assert stored["messages"][-1]["content"][0]["data"]["status"] == "waitingSubmission"

    answered = await _ok(
        await client.post(
            _submission(cid, call_id),
            json={"action": "accept", "content": {"confirm": True, "reason": "old"}},
            headers=ALICE,
        )
    )

    assert answered["part"]["data"]["status"] == "success"
    assert answered["part"]["data"]["result"] == {
        "path": "a.txt",
        "outcome": "removed",
        "reason": "old",
    }
    assert "elicitation" not in answered["part"]["data"]
    async with client.services.db.read() as tx:  # what a tab following the conversation reads
        feed = [e.data for e in await tx.feed.after(cid, 0) if e.kind == "part"]
    assert [(e["cause"], e["part"]["data"]["status"]) for e in feed] == [
        ("input_answered", "success")
    ]
    resumed = await _follow(client, answered["events_url"])
    assert resumed[-1].data["status"] == "completed"
    assert any(f.event == "text_delta" and "Done" in f.data["delta"] for f in resumed)


async def test_a_declined_question_reaches_the_server_as_declined(client: ApiClient) -> None:
    cid, call_id, _ = await _asked(client)

    answered = await _ok(
        await client.post(_submission(cid, call_id), json={"action": "decline"}, headers=ALICE)
    )

    assert answered["part"]["data"]["status"] == "success"
    assert answered["part"]["data"]["result"] == {"path": "a.txt", "outcome": "decline"}
    assert answered["run_id"] is not None


async def test_an_answer_not_matching_the_schema_is_422_and_the_question_stays_open(
    client: ApiClient,
) -> None:
    cid, call_id, _ = await _asked(client)
    url = _submission(cid, call_id)

    wrong = await client.post(
        url, json={"action": "accept", "content": {"confirm": "yes"}}, headers=ALICE
    )
    missing = await client.post(url, json={"action": "accept"}, headers=ALICE)
    extra = await client.post(
        url, json={"action": "decline", "content": {"confirm": True}}, headers=ALICE
    )

    assert wrong.status_code == 422
    assert wrong.json()["error"]["code"] == "invalid_submission"
    assert wrong.json()["error"]["problems"] == [
        "'reason' is a required property",
        "confirm: 'yes' is not of type 'boolean'",
    ]
    assert missing.json()["error"]["code"] == "invalid_submission"
    assert extra.json()["error"]["code"] == "invalid_submission"
    ok = await _ok(
        await client.post(
            url,
            json={"action": "accept", "content": {"confirm": False, "reason": "x"}},
            headers=ALICE,
        )
    )
    assert ok["part"]["data"]["result"]["outcome"] == "kept"


async def test_a_second_answer_is_409_and_another_users_is_404(client: ApiClient) -> None:
    cid, call_id, _ = await _asked(client)
    url = _submission(cid, call_id)

    foreign = await client.post(url, json={"action": "cancel"}, headers=BOB)
    await _ok(await client.post(url, json={"action": "cancel"}, headers=ALICE))
    again = await client.post(url, json={"action": "cancel"}, headers=ALICE)
    unknown = await client.post(
        _submission(cid, "call_nope"), json={"action": "cancel"}, headers=ALICE
    )

    assert foreign.status_code == 404
    assert foreign.json()["error"]["code"] == "submission_not_found"
    assert again.status_code == 409
    assert again.json()["error"]["code"] == "already_answered"
    assert unknown.status_code == 404
    async with client.services.db.sessions() as s:
        rows = await s.scalars(select(AuditRow).where(AuditRow.target_type == "elicitation"))
        actions = [r.action for r in rows.all()]
    assert actions == ["elicitation.cancel"]


async def test_the_answer_reaching_another_instance_retries_the_call_there(
    make_api: MakeApi, app_settings: Settings, http_server: HttpServer
) -> None:
    settings = _settings(app_settings, http_server)
    providers: dict[str, Any] = {"scripted": ScriptedProvider(SCRIPT)}
    async with make_api(settings, providers=providers) as first:
        cid, call_id, _ = await _asked(first)
    # The first instance is gone (its MCP connection too); a second one gets the answer.
    async with make_api(settings, providers={"scripted": ScriptedProvider(SCRIPT)}) as second:
        answered = await _ok(
            await second.post(
                _submission(cid, call_id),
                json={"action": "accept", "content": {"confirm": True, "reason": "moved"}},
                headers=ALICE,
            )
        )
        assert answered["part"]["data"]["result"]["reason"] == "moved"
        resumed = await _follow(second, answered["events_url"])
        assert resumed[-1].data["status"] == "completed"


async def _follow(client: ApiClient, url: str) -> list[Frame]:
    response = await client.get(url, headers=ALICE)
    assert response.status_code == 200, response.text
    return parse(response.text)
