"""A tool that calls a downstream API as the user: the downstream sees the user (a minted
token for its audience, or the caller's own JWT when allowed) and, separately, the
service; no token reaches the model, the answer, the stored rows or the logs."""

from __future__ import annotations

import asyncio
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
from app.toolruntime.background import token_lost_message
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


async def _job_left_by_a_stopped_process(make_api: MakeApi, settings: Settings, tool: str) -> str:
    """Alice's conversation whose turn started `tool` as a job, then its process stopped
    with the job still running (its bearer token gone with it): the conversation's id."""
    forwarding_tools.SLOW["seconds"] = 60
    turns = [ScriptedTurn(tool_calls=[ScriptedToolCall(name=tool, id="call_1")])]
    providers = {"scripted": ScriptedProvider(Script(mode="sequence", turns=turns))}
    async with make_api(settings, providers=providers) as first:
        cid: str = (await first.post("/api/conversations", json={}, headers=alice())).json()["id"]
        started = await first.post(
            f"/api/conversations/{cid}/messages", json={"content": "orders"}, headers=alice()
        )
        await first.get(started.json()["events_url"], headers=alice())  # the turn ended
    forwarding_tools.SLOW["seconds"] = 0
    return cid


async def _after_restart(
    make_api: MakeApi, settings: Settings, cid: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The restarted service resumes or fails the job: (its tool part, the job)."""
    answer = Script(mode="sequence", turns=[ScriptedTurn(text="Here is what happened.")])
    async with make_api(settings, providers={"scripted": ScriptedProvider(answer)}) as again:
        while True:
            detail = (await again.get(f"/api/conversations/{cid}", headers=alice())).json()
            assistants = [m for m in detail["messages"] if m["role"] == "assistant"]
            if len(assistants) >= 2 and detail["active_run_id"] is None:
                break
            await asyncio.sleep(0.05)
        jobs = (await again.get("/api/background-jobs", headers=alice())).json()["data"]
    part = next(p for p in assistants[0]["content"] if p["type"] == "tool")
    return part["data"], jobs[0]


async def test_a_job_resumed_after_a_restart_acts_as_the_user_with_a_freshly_minted_token(
    make_api: MakeApi, settings: Settings, downstream: Downstream
) -> None:
    settings = settings.model_copy(update={"run_lease_seconds": 0.3})
    cid = await _job_left_by_a_stopped_process(make_api, settings, "slow_orders_minted")

    part, job = await asyncio.wait_for(_after_restart(make_api, settings, cid), 60)

    assert (job["status"], job["attempts"]) == ("succeeded", 2)
    assert part["result"] == {"orders_of": "alice", "relayed_by": "chat-bff"}
    assert downstream.seen == [
        {"user": "alice", "actor": "chat-bff", "service": "chat-bff", "roles": ["user"]}
    ]


async def test_a_job_forwarding_the_users_own_token_fails_after_a_restart_saying_why(
    make_api: MakeApi, settings: Settings, downstream: Downstream
) -> None:
    update = {"run_lease_seconds": 0.3, "forward_bearer_tokens": True}
    settings = settings.model_copy(update=update)
    cid = await _job_left_by_a_stopped_process(make_api, settings, "slow_orders_bearer")

    part, job = await asyncio.wait_for(_after_restart(make_api, settings, cid), 60)

    assert job["status"] == "failed"
    assert job["error"] == token_lost_message("slow_orders_bearer")
    assert part["status"] == "error"
    assert part["result"] == {"error": token_lost_message("slow_orders_bearer")}
    assert downstream.seen == []  # nothing reached the downstream without the user's token


_TABLES = {
    "sqlite": "SELECT name FROM sqlite_master WHERE type = 'table'",
    "postgresql": "SELECT tablename FROM pg_tables WHERE schemaname = 'public'",
}
