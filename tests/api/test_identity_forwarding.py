"""A tool that calls a downstream API as the user: the downstream sees the user (a minted
token for its audience, or the caller's own JWT when allowed) and, separately, the
service; no token reaches the model, the answer, the stored rows or the logs."""

from __future__ import annotations

import json
import threading
from collections.abc import AsyncIterator, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jwt
import pytest
from pydantic import SecretStr
from sqlalchemy import text

from app.providers.scripted import Script, ScriptedProvider, ScriptedToolCall, ScriptedTurn
from app.settings import Settings
from tests.auth.tokens import HS_SECRET, bearer, hs_token
from tests.fakes.db import ApiClient, MakeApi
from tests.support import forwarding_tools

FORWARD_SECRET = "forward-secret-5d9e1b3f7a2c4e6081f3b5d7a9c1e3f5"


class Downstream:
    """The orders API: checks both identities like a real downstream would."""

    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []
        self.raw_tokens: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                answer = outer.check(dict(self.headers.items()))
                body = json.dumps(answer[1]).encode()
                self.send_response(answer[0])
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def check(self, headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
        user = headers.get("Authorization", "").removeprefix("Bearer ")
        service = headers.get("X-Service-Authorization", "").removeprefix("Bearer ")
        self.raw_tokens += [t for t in (user, service) if t]
        try:
            svc = jwt.decode(service, FORWARD_SECRET, algorithms=["HS256"], audience="orders-api")
            try:  # a minted user token for our audience ...
                who = jwt.decode(user, FORWARD_SECRET, algorithms=["HS256"], audience="orders-api")
            except jwt.InvalidTokenError:  # ... or the user's own token, passed on
                who = jwt.decode(user, HS_SECRET, algorithms=["HS256"], audience="chat-bff")
        except jwt.InvalidTokenError as exc:
            return 401, {"error": str(exc)}
        seen = {
            "user": who["sub"],
            "actor": who.get("act", {}).get("sub"),
            "service": svc["sub"],
            "roles": who.get("roles"),
        }
        self.seen.append(seen)
        return 200, {"orders_of": who["sub"], "relayed_by": svc["sub"]}


@pytest.fixture
def downstream() -> Iterator[Downstream]:
    server = Downstream()
    thread = threading.Thread(target=server.server.serve_forever, daemon=True)
    thread.start()
    forwarding_tools.DOWNSTREAM["url"] = server.url
    yield server
    server.server.shutdown()
    server.server.server_close()


def scripted(tool: str) -> ScriptedProvider:
    turns = [
        ScriptedTurn(tool_calls=[ScriptedToolCall(name=tool, id="call_1")]),
        ScriptedTurn(text="Here are your orders."),
    ]
    return ScriptedProvider(Script(mode="sequence", turns=turns))


@pytest.fixture
def settings(app_settings: Settings) -> Settings:
    return app_settings.model_copy(
        update={
            "jwt_secret": SecretStr(HS_SECRET),
            "jwt_audience": "chat-bff",
            "forward_token_secret": SecretStr(FORWARD_SECRET),
            "tool_modules": ["tests.support.forwarding_tools"],
            "example_tools_enabled": False,
        }
    )


@pytest.fixture
async def api(make_api: MakeApi, settings: Settings) -> AsyncIterator[ApiClient]:
    async with make_api(settings) as client:
        yield client


def alice() -> dict[str, str]:
    return bearer(hs_token(sub="alice", roles=["user"], extra={"aud": "chat-bff"}))


async def chat_tool_part(api: ApiClient, tool: str) -> dict[str, Any]:
    """A stateless /api/chat turn by alice where the model calls `tool`: its tool part."""
    api.services.providers["scripted"] = scripted(tool)
    response = await api.post(
        "/api/chat", json={"messages": [{"role": "user", "content": "orders"}]}, headers=alice()
    )
    part: dict[str, Any] = next(
        p for p in response.json()["message"]["content"] if p["type"] == "tool"
    )
    return part


async def test_a_minted_token_tells_the_downstream_the_user_and_the_service(
    api: ApiClient, downstream: Downstream, caplog: pytest.LogCaptureFixture
) -> None:
    api.services.providers["scripted"] = scripted("my_orders")
    cid = (await api.post("/api/conversations", json={}, headers=alice())).json()["id"]

    started = await api.post(
        f"/api/conversations/{cid}/messages", json={"content": "my orders"}, headers=alice()
    )
    events = await api.get(started.json()["events_url"], headers=alice())
    detail = await api.get(f"/api/conversations/{cid}", headers=alice())

    assert downstream.seen == [
        {"user": "alice", "actor": "chat-bff", "service": "chat-bff", "roles": ["user"]}
    ]
    tool = next(p for p in detail.json()["messages"][-1]["content"] if p["type"] == "tool")
    assert tool["data"]["result"] == {"orders_of": "alice", "relayed_by": "chat-bff"}
    # The tokens the downstream received are nowhere else.
    async with api.services.db.sessions() as s:
        tables = [r[0] for r in await s.execute(text(_TABLES[api.services.db.engine.dialect.name]))]
        rows = [str(r) for t in tables for r in await s.execute(text(f'SELECT * FROM "{t}"'))]
    everything = "\n".join([events.text, detail.text, caplog.text, *rows])
    for token in downstream.raw_tokens:
        assert token not in everything


async def test_the_callers_own_token_is_passed_on_only_when_the_deployment_allows_it(
    make_api: MakeApi, settings: Settings, downstream: Downstream
) -> None:
    for allowed in (False, True):
        update = {"forward_bearer_tokens": allowed}
        async with make_api(settings.model_copy(update=update)) as api:
            tool = await chat_tool_part(api, "my_orders_bearer")
        if allowed:
            assert tool["data"]["status"] == "success"
            assert tool["data"]["result"]["orders_of"] == "alice"
        else:
            assert tool["data"]["status"] == "error"
            assert "cannot forward the user's identity" in json.dumps(tool["data"]["result"])
    assert [s["user"] for s in downstream.seen] == ["alice"]  # only the allowed call got out


async def test_without_a_minting_key_the_tool_fails_and_the_downstream_is_never_called(
    make_api: MakeApi, settings: Settings, downstream: Downstream
) -> None:
    async with make_api(settings.model_copy(update={"forward_token_secret": None})) as api:
        tool = await chat_tool_part(api, "my_orders")

    assert tool["data"]["status"] == "error"
    assert downstream.seen == []


_TABLES = {
    "sqlite": "SELECT name FROM sqlite_master WHERE type = 'table'",
    "postgresql": "SELECT tablename FROM pg_tables WHERE schemaname = 'public'",
}
