"""Stream tokens: an EventSource URL credential, bound to a user, a scope and a short life."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import jwt
import pytest
from pydantic import SecretStr

from app.auth.stream_tokens import derive_stream_key
from tests.auth.tokens import HS_SECRET, bearer, hs_token, sqlite_settings
from tests.fakes.db import MakeApi

ALICE = bearer(hs_token(sub="alice"))
UNAUTHORIZED = {"error": {"code": "unauthorized", "message": "Missing or invalid credentials."}}


@pytest.fixture
def settings(tmp_path: Path) -> Any:
    return sqlite_settings(tmp_path, jwt_secret=SecretStr(HS_SECRET))


async def start_run(api: Any) -> tuple[str, str]:
    created = await api.post("/api/conversations", json={}, headers=ALICE)
    assert created.status_code == 201, created.text
    conversation_id = created.json()["id"]
    sent = await api.post(
        f"/api/conversations/{conversation_id}/messages", json={"content": "hi"}, headers=ALICE
    )
    assert sent.status_code == 202, sent.text
    return conversation_id, sent.json()["run_id"]


async def mint(api: Any, **body: Any) -> str:
    response = await api.post("/api/stream-tokens", json=body, headers=ALICE)
    assert response.status_code == 200, response.text
    token: str = response.json()["token"]
    return token


async def test_a_stream_token_opens_its_run_events_without_headers(
    make_api: MakeApi, settings: Any
) -> None:
    async with make_api(settings) as api:
        conversation_id, run_id = await start_run(api)
        url = f"/api/conversations/{conversation_id}/runs/{run_id}/events"
        token = await mint(api, path=url)
        response = await api.get(url, params={"token": token})
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        assert "event: run_end" in response.text
        by_run = await mint(api, run_id=run_id)
        assert (await api.get(url, params={"token": by_run})).status_code == 200


async def test_a_stream_token_acts_as_the_user_who_minted_it(
    make_api: MakeApi, settings: Any
) -> None:
    async with make_api(settings) as api:
        token = await mint(api, path="/api/conversations/x")
        other = await api.get("/api/conversations/x/runs/r/events", params={"token": token})
    # Authenticated as alice; the run simply does not exist (a 404, not a 401).
    assert other.status_code == 404


@pytest.mark.parametrize(
    ("scope", "method", "path"),
    [
        ({"path": "/api/conversations/a"}, "GET", "/api/conversations/b/runs/r/events"),
        ({"path": "/api/conversations/a"}, "GET", "/api/conversations/ab"),
        ({"path": "/api/conversations/a"}, "GET", "/api/me"),
        ({"path": "/api/conversations/a"}, "POST", "/api/conversations/a/runs/r/cancel"),
        ({"run_id": "r1"}, "GET", "/api/conversations/a/runs/r2/events"),
    ],
)
async def test_a_stream_token_is_401_outside_its_scope(
    make_api: MakeApi, settings: Any, scope: dict[str, str], method: str, path: str
) -> None:
    async with make_api(settings) as api:
        if "run_id" in scope:  # a run token is minted only for one's own run
            scope = {"run_id": (await start_run(api))[1]}
        token = await mint(api, **scope)
        response = await api.request(method, path, params={"token": token})
    assert response.status_code == 401
    assert response.json() == UNAUTHORIZED


async def test_an_expired_stream_token_is_401(make_api: MakeApi, settings: Any) -> None:
    key, _ = derive_stream_key(HS_SECRET, None)
    now = int(time.time())
    claims = {
        "typ": "stream",
        "aud": "chat-bff:stream",
        "sub": "alice",
        "roles": ["user"],
        "pfx": "/api/conversations/a",
        "iat": now - 600,
        "exp": now - 300,
    }
    expired = jwt.encode(claims, key, algorithm="HS256")
    fresh = jwt.encode({**claims, "exp": now + 300}, key, algorithm="HS256")
    async with make_api(settings) as api:
        gone = await api.get("/api/conversations/a", params={"token": expired})
        ok = await api.get("/api/conversations/a", params={"token": fresh})
    assert gone.status_code == 401
    assert ok.status_code == 404  # authenticated; the conversation does not exist


async def test_a_stream_token_is_not_a_bearer_token_and_vice_versa(
    make_api: MakeApi, settings: Any
) -> None:
    async with make_api(settings) as api:
        token = await mint(api, path="/api/conversations/a")
        as_bearer = await api.get("/api/conversations/a", headers=bearer(token))
        user_jwt = hs_token(sub="alice")
        as_stream = await api.get("/api/conversations/a", params={"token": user_jwt})
    assert as_bearer.status_code == 401
    assert as_stream.status_code == 401


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"path": "/"},
        {"path": "/api"},
        {"path": "/api/conversations"},
        {"path": "/api/conversations/../admin"},
        {"path": "relative/path"},
        {"path": "/api/conversations/a?x=1"},
        {"path": "/api/conversations//a"},
        {"path": "/api/conversations/./a"},
        {"path": ""},
        {"run_id": ""},
        {"path": "/api/conversations/a", "run_id": "r"},
    ],
)
async def test_only_narrow_scopes_can_be_minted(
    make_api: MakeApi, settings: Any, body: dict[str, str]
) -> None:
    async with make_api(settings) as api:
        response = await api.post("/api/stream-tokens", json=body, headers=ALICE)
    assert response.status_code == 422
    assert response.json()["error"]["code"] == "validation_error"


async def test_minting_needs_a_caller(make_api: MakeApi, settings: Any) -> None:
    async with make_api(settings) as api:
        response = await api.post("/api/stream-tokens", json={"path": "/api/conversations/a"})
    assert response.status_code == 401


async def test_the_202_for_a_sent_message_carries_a_stream_token_for_eventsource(
    make_api: MakeApi, settings: Any
) -> None:
    async with make_api(settings) as api:
        created = await api.post("/api/conversations", json={}, headers=ALICE)
        conversation_id = created.json()["id"]
        sent = await api.post(
            f"/api/conversations/{conversation_id}/messages",
            json={"content": "hi"},
            headers=ALICE,
        )
        started = sent.json()

        response = await api.get(started["events_url"], params={"token": started["stream_token"]})

        assert response.status_code == 200
        assert "event: run_end" in response.text


async def test_without_authentication_there_is_no_stream_token(
    make_api: MakeApi, tmp_path: Path
) -> None:
    async with make_api(sqlite_settings(tmp_path)) as api:
        conversation_id = (await api.post("/api/conversations", json={})).json()["id"]
        sent = await api.post(
            f"/api/conversations/{conversation_id}/messages", json={"content": "hi"}
        )

        assert sent.json()["stream_token"] is None


async def test_a_request_without_a_query_string_is_not_searched_for_a_stream_token(
    make_api: MakeApi, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every route asks for its caller: parsing an empty query string cost each request 3 us
    # (a turn route's ordinary request parses nothing else of it: `app.api.direct_handler`).
    from starlette import requests

    def unparsed(*args: Any) -> Any:
        raise AssertionError("the query string was parsed")

    async with make_api(settings) as api:
        monkeypatch.setattr(requests, "QueryParams", unparsed)
        chat = {"messages": [{"role": "user", "content": "Hi"}]}
        answered = await api.post("/api/chat", json=chat, headers=ALICE)

    assert answered.status_code == 200, answered.text
