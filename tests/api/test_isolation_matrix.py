"""Another user's id is a 404 on every route that takes one, the same as a missing id.

The matrix is generated from the app's own route table: every route with a path parameter
x every method. How to make an id of each kind (through the API, as its owner) is the
explicit table `KINDS`; the sample body of each route that takes one is `BODIES`. A route
with an id kind or a body this file does not know fails `test_every_id_route_is_covered`,
so a new route cannot slip through untested: teach this file how to populate it.

For routes with several ids, each id is also tried alone (the others the prober's own), so
"my conversation, your run" is covered too. GET routes are also probed the EventSource way,
with a `?token=` stream token the prober minted for that path. The model must not be called
by any probe.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from fastapi.routing import APIRoute, iter_route_contexts
from pydantic import SecretStr

from app.main import create_app
from app.providers.scripted import Script, ScriptedProvider, ScriptedToolCall, ScriptedTurn
from app.settings import Settings
from tests.auth.tokens import HS_SECRET, bearer, hs_token
from tests.fakes.db import ApiClient, MakeApi

OWNER = "user-a"
PROBER = "user-b"
HEADERS = {
    # The owner is also an admin, so admin-only ids (API keys) can be made through the API.
    OWNER: bearer(hs_token(sub=OWNER, roles=["user", "admin"])),
    PROBER: bearer(hs_token(sub=PROBER, roles=["user"])),
}
_PARAM = re.compile(r"{(\w+)(?::\w+)?}")


# --- how to make each kind of id, as its owner, through the API -------------------------


@dataclass
class World:
    """Ids made so far, per user; each kind is made once per user and test."""

    api: ApiClient
    made: dict[tuple[str, str], str] = field(default_factory=dict)

    async def id(self, kind: str, user: str) -> str:
        key = (kind, user)
        if key not in self.made:
            self.made[key] = await KINDS[kind](self, user)
        return self.made[key]

    async def call(self, user: str, method: str, path: str, **kw: Any) -> Any:
        response = await self.api.request(method, path, headers=HEADERS[user], **kw)
        assert response.status_code < 300, f"{method} {path}: {response.text}"
        return response.json() if response.content else None

    async def run_to_end(self, user: str, conversation_id: str, content: str) -> str:
        started = await self.call(
            user,
            "POST",
            f"/api/conversations/{conversation_id}/messages",
            json={"content": content},
        )
        # Reading the events to the end waits for the run to finish.
        events = await self.api.get(started["events_url"], headers=HEADERS[user])
        assert "run_end" in events.text
        run_id: str = started["run_id"]
        return run_id


async def _conversation(world: World, user: str) -> str:
    created = await world.call(user, "POST", "/api/conversations", json={})
    conversation_id: str = created["id"]
    return conversation_id


async def _run(world: World, user: str) -> str:
    conversation_id = await world.id("conversation_id", user)
    return await world.run_to_end(user, conversation_id, "hello")


async def _response(world: World, user: str) -> str:
    # A stored Responses response: a turn of a conversation.
    conversation_id = await world.id("conversation_id", user)
    body = {"input": "hello", "conversation": conversation_id}
    created = await world.call(user, "POST", "/v1/responses", json=body)
    response_id: str = created["id"]
    return response_id


async def _message(world: World, user: str) -> str:
    await world.id("run_id", user)
    conversation_id = await world.id("conversation_id", user)
    detail = await world.call(user, "GET", f"/api/conversations/{conversation_id}")
    message_id: str = detail["messages"][0]["id"]
    return message_id


async def _approval(world: World, user: str) -> str:
    # Its own conversation: the pending approval leaves that run waiting for a human.
    conversation_id = await _conversation(world, user)
    await world.run_to_end(user, conversation_id, "please delete Ada")
    inbox = await world.call(user, "GET", "/api/approvals")
    approval_id: str = inbox["data"][0]["id"]
    return approval_id


async def _tool_call(world: World, user: str) -> str:
    # A server tool call waiting for a person in the user's conversation (here an approval;
    # a question of an MCP server's is tested with a real server in tests/mcp).
    conversation_id = await world.id("conversation_id", user)
    await world.run_to_end(user, conversation_id, "please delete Ada")
    detail = await world.call(user, "GET", f"/api/conversations/{conversation_id}")
    part = next(p for p in detail["messages"][-1]["content"] if p["type"] == "tool")
    tool_call_id: str = part["id"]
    return tool_call_id


async def _api_key(world: World, user: str) -> str:
    body = {"name": "matrix", "owner_id": user, "roles": ["user"]}
    created = await world.call(user, "POST", "/api/admin/api-keys", json=body)
    key_id: str = created["id"]
    return key_id


async def _chat(world: World, user: str) -> str:
    # A Vercel AI SDK chat id names a chat within its user's own namespace: another user
    # sending the same id reaches a conversation of their own (never this one).
    chat_id = f"chat-{uuid.uuid4().hex}"
    message = {"id": "m1", "role": "user", "parts": [{"type": "text", "text": "hello"}]}
    response = await world.api.post(
        "/api/ui/chat", headers=HEADERS[user], json={"id": chat_id, "message": message}
    )
    assert response.status_code == 200 and "data: [DONE]" in response.text, response.text
    return chat_id


async def _thread(world: World, user: str) -> str:
    # An AG-UI thread id, like a chat id, names a thread within its user's own namespace.
    thread_id = f"thread-{uuid.uuid4().hex}"
    body = {
        "threadId": thread_id,
        "runId": f"run-{uuid.uuid4().hex}",
        "messages": [{"id": "m1", "role": "user", "content": "hello"}],
        "tools": [],
        "context": [],
        "state": {},
        "forwardedProps": {},
    }
    response = await world.api.post("/api/agui", headers=HEADERS[user], json=body)
    assert response.status_code == 200 and "RUN_FINISHED" in response.text, response.text
    return thread_id


async def _file(world: World, user: str) -> str:
    upload = {"file": ("data.csv", b"a,b\n1,2\n", "text/csv")}
    created = await world.call(user, "POST", "/api/files", files=upload)
    file_id: str = created["id"]
    return file_id


async def _job(world: World, user: str) -> str:
    # A long-running tool's background job, still running (the script asks for 30 s).
    conversation_id = await _conversation(world, user)
    await world.run_to_end(user, conversation_id, "please export the database")
    jobs = await world.call(user, "GET", "/api/background-jobs")
    job_id: str = jobs["data"][0]["id"]
    return job_id


async def _workspace(world: World, user: str) -> str:
    # A workspace id, like a chat id, names a scope within its user's own conversations:
    # another user's conversations bound to the same id are never in it.
    workspace_id = f"ws-{uuid.uuid4().hex}"
    body = {"scope": {"workspace_id": workspace_id}}
    await world.call(user, "POST", "/api/conversations", json=body)
    return workspace_id


KINDS: dict[str, Callable[[World, str], Awaitable[str]]] = {
    "conversation_id": _conversation,
    "chat_id": _chat,
    "run_id": _run,
    "message_id": _message,
    "approval_id": _approval,
    "tool_call_id": _tool_call,
    "key_id": _api_key,
    "file_id": _file,
    "thread_id": _thread,
    # An OpenAI Conversations item is a stored message.
    "item_id": _message,
    "response_id": _response,
    "job_id": _job,
    "workspace_id": _workspace,
}

# Ids no user owns: the catalogue's model ids are shared. A model a caller's roles do not
# allow answers 404 like an unknown one (test_openai_params, test_models). `name` is a
# file of the built-in page or the API docs, the same for everyone (test_page).
SHARED = {"model_id", "name"}

# A valid body for each route that takes one, so the probe reaches the ownership check
# instead of stopping at validation (a 422 would prove nothing).
BODIES: dict[tuple[str, str], dict[str, Any]] = {
    ("PATCH", "/api/conversations/{conversation_id}"): {"title": "mine now"},
    ("POST", "/api/conversations/{conversation_id}/messages"): {"content": "hi"},
    ("PUT", "/api/conversations/{conversation_id}/messages/{message_id}"): {"content": "edit"},
    ("POST", "/api/conversations/{conversation_id}/regenerate"): {},
    ("POST", "/api/conversations/{conversation_id}/tool-results"): {
        "results": [{"toolCallId": "call_x", "status": "success", "result": {"ok": True}}]
    },
    ("POST", "/api/conversations/{conversation_id}/proposals/approve"): {},
    ("POST", "/api/conversations/{conversation_id}/proposals/reject"): {},
    ("POST", "/api/approvals/{approval_id}"): {"decision": "approve"},
    ("POST", "/api/conversations/{conversation_id}/submissions/{tool_call_id}"): {
        "action": "cancel"
    },
    ("POST", "/api/conversations/{conversation_id}/proposals/undo"): {},
    ("POST", "/api/workspaces/{workspace_id}/proposals/undo"): {},
    ("POST", "/v1/conversations/{conversation_id}"): {"metadata": {"topic": "mine now"}},
    ("POST", "/v1/conversations/{conversation_id}/items"): {
        "items": [{"type": "message", "role": "user", "content": "hi"}]
    },
}
# Routes that answer a missing id with 204 instead of 404: a Vercel AI SDK client asks
# to resume every chat it opens, new ones included, and must not see an error for them.
EMPTY_WHEN_MISSING = {("GET", "/api/ui/chat/{chat_id}/stream")}
# Query strings that reach a different code path of the same route.
QUERIES: dict[tuple[str, str], list[dict[str, str]]] = {
    ("DELETE", "/api/conversations/{conversation_id}"): [{}, {"purge": "true"}],
    ("GET", "/v1/responses/{response_id}"): [
        {},
        {"stream": "true"},
        {"stream": "true", "starting_after": "2"},
    ],
}


# --- the route table ----------------------------------------------------------------------


def _owned_routes(
    table: list[tuple[str, str, list[str], bool]],
) -> list[tuple[str, str, list[str], bool]]:
    return [r for r in table if not set(r[2]) & SHARED]


def _route_table() -> list[tuple[str, str, list[str], bool]]:
    """(method, path template, id params, takes a body) for every route with an id,
    including routers nested in routers (FastAPI keeps those as included-router nodes)."""
    settings = Settings(_env_file=None, environment="test")
    app = create_app(settings)
    table = []
    for context in iter_route_contexts(app.routes):
        route = context.original_route
        path = context.path
        if not isinstance(path, str) or not _PARAM.search(path):
            continue
        params = _PARAM.findall(path)
        has_body = isinstance(route, APIRoute) and route.body_field is not None
        for method in sorted((context.methods or set()) - {"HEAD", "OPTIONS"}):
            table.append((method, path, params, has_body))
    return table


ROUTES = _route_table()


def test_every_id_route_is_covered() -> None:
    assert ROUTES, "no route takes an id: the route table was not read"
    unknown = [
        f"{method} {path}: id kind {p!r} (add it to KINDS)"
        for method, path, params, _ in ROUTES
        for p in params
        if p not in KINDS and p not in SHARED
    ]
    unknown += [
        f"{method} {path}: takes a body (add a valid one to BODIES)"
        for method, path, _, has_body in ROUTES
        if has_body and (method, path) not in BODIES
    ]
    assert unknown == []


def _script() -> Script:
    return Script(
        mode="rules",
        turns=[
            ScriptedTurn(
                match="delete",
                tool_calls=[ScriptedToolCall(name="delete_node", args={"id": "Ada"})],
            ),
            ScriptedTurn(
                match="export",
                tool_calls=[ScriptedToolCall(name="export_database", args={"seconds": 30})],
            ),
            ScriptedTurn(text="Hello there."),
        ],
    )


def _comparable(response: Any, ids: list[str]) -> tuple[int, Any]:
    text = response.text
    for value in ids:
        text = text.replace(value, "<id>")
    return response.status_code, text


@pytest.mark.parametrize(
    ("method", "path", "params", "has_body"),
    [pytest.param(*r, id=f"{r[0]} {r[1]}") for r in _owned_routes(ROUTES)],
)
async def test_another_users_id_is_404_like_a_missing_one(
    make_api: MakeApi,
    app_settings: Settings,
    method: str,
    path: str,
    params: list[str],
    has_body: bool,
) -> None:
    if any(p not in KINDS for p in params) or (has_body and (method, path) not in BODIES):
        pytest.fail(f"{method} {path} is not covered: see test_every_id_route_is_covered")
    settings = app_settings.model_copy(
        update={
            "jwt_secret": SecretStr(HS_SECRET),
            "example_tools_enabled": True,
            "tool_modules": ["app.examples.ops.backup"],
        }
    )
    provider = ScriptedProvider(_script(), delay_ms=0)
    async with make_api(settings, providers={"scripted": provider}) as api:
        world = World(api)
        owners = {p: await world.id(p, OWNER) for p in params}
        # (ids to send, which of them are the owner's): all the owner's, then for routes
        # with several ids each one alone among the prober's own.
        combos: list[tuple[dict[str, str], list[str]]] = [(owners, list(params))]
        if len(params) > 1:
            own = {p: await world.id(p, PROBER) for p in params}
            combos += [({**own, p: owners[p]}, [p]) for p in params]
        body = BODIES.get((method, path))
        for query in QUERIES.get((method, path), [{}]):

            async def probe(ids: dict[str, str], q: dict[str, str] = query) -> Any:
                return await api.request(
                    method,
                    path.format(**ids),
                    headers=HEADERS[PROBER],
                    params=q,
                    json=body if body is not None else None,
                )

            model_calls = len(provider.requests)
            for ids, foreign in combos:
                # The same request with the owner's ids swapped for ids that do not exist.
                missing = {
                    p: f"{p.split('_')[0]}_{uuid.uuid4().hex}" if p in foreign else v
                    for p, v in ids.items()
                }
                baseline = await probe(missing)
                expected = 204 if (method, path) in EMPTY_WHEN_MISSING else 404
                assert baseline.status_code == expected, f"missing {foreign}: {baseline.text}"
                response = await probe(ids)
                swapped = [ids[p] for p in foreign]
                assert _comparable(response, swapped) == _comparable(
                    baseline, [missing[p] for p in foreign]
                ), f"{method} {path} with {ids}: {response.status_code} {response.text}"
                if method == "GET" and path.startswith("/api/"):
                    # The EventSource way in: a stream token the prober minted for this path
                    # (stream tokens are for /api paths; the /v1 surfaces take keys only).
                    url = path.format(**ids)
                    minted = await world.call(
                        PROBER, "POST", "/api/stream-tokens", json={"path": url}
                    )
                    by_token = await api.get(url, params={**query, "token": minted["token"]})
                    assert _comparable(by_token, swapped) == _comparable(
                        baseline, [missing[p] for p in foreign]
                    ), f"GET {url} with a stream token: {by_token.status_code} {by_token.text}"
            assert len(provider.requests) == model_calls, "a probe reached the model"
        if "conversation_id" in params:
            conversation_id = owners["conversation_id"]
            still = await api.get(f"/api/conversations/{conversation_id}", headers=HEADERS[OWNER])
            assert still.status_code == 200 and not still.json()["archived"]
