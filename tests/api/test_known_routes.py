"""Once a turn route is known, its requests go to it past the routing layers
(`app.api.known_routes`); what they did for a request is still done, and what the
shortcut cannot vouch for still goes through them. The corpus of requests both ways is
`tests/api/test_direct_path_differential.py`'s."""

from __future__ import annotations

import json
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

import pytest
from fastapi import HTTPException, Request
from pydantic import SecretStr
from starlette.middleware.exceptions import ExceptionMiddleware

from app.api.deps import get_turn
from app.api.known_routes import KnownRoutes
from tests.api.test_direct_path_differential import layered_calls as layered_calls  # fixture
from tests.auth.tokens import HS_SECRET, bearer, hs_token, sqlite_settings
from tests.fakes.db import MakeApi

ALICE = bearer(hs_token(sub="alice"))
URL = "/v1/chat/completions"
BODY = {"model": "scripted", "messages": [{"role": "user", "content": "Hi"}]}


def settings(tmp_path: Path, **values: Any) -> Any:
    return sqlite_settings(tmp_path, jwt_secret=SecretStr(HS_SECRET), **values)


async def test_dependency_overrides_set_once_the_route_is_known_apply(
    make_api: MakeApi, tmp_path: Path, layered_calls: list[tuple[str, str]]
) -> None:
    async def closed(request: Request) -> Any:
        raise HTTPException(503, "closed for the test")

    async with make_api(settings(tmp_path)) as api:
        known = await api.post(URL, json=BODY, headers=ALICE)
        api.app.dependency_overrides[get_turn] = closed
        overridden = await api.post(URL, json=BODY, headers=ALICE)

    assert [known.status_code, overridden.status_code] == [200, 503]
    assert layered_calls.count(("POST", URL)) == 1  # the second went past the layers


async def test_a_traced_request_goes_through_the_routing_layers(
    make_api: MakeApi, tmp_path: Path, layered_calls: list[tuple[str, str]]
) -> None:
    # OpenTelemetry's request state in the scope: the router names the route on its span.
    async with make_api(settings(tmp_path)) as api:
        await api.post(URL, json=BODY, headers=ALICE)
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "POST",
            "scheme": "http",
            "path": URL,
            "raw_path": URL.encode(),
            "root_path": "",
            "query_string": b"",
            "headers": [(b"content-type", b"application/json"), (b"host", b"test")],
            "fastapi.telemetry": None,
        }
        messages: list[MutableMapping[str, Any]] = []

        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": json.dumps(BODY).encode(), "more_body": False}

        async def send(message: MutableMapping[str, Any]) -> None:
            messages.append(message)

        await api.app(scope, receive, send)

    assert messages[0]["status"] == 401  # no caller: answered, through the layers
    assert layered_calls.count(("POST", URL)) == 2


def test_layers_other_than_those_it_was_written_against_are_never_skipped() -> None:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        raise AssertionError("not called")

    assert not KnownRoutes(app).enabled
    assert not KnownRoutes(ExceptionMiddleware(app)).enabled


async def test_the_service_stack_is_the_one_the_shortcut_was_written_against(
    make_api: MakeApi, tmp_path: Path, layered_calls: list[tuple[str, str]]
) -> None:
    async with make_api(settings(tmp_path)) as api:
        for _ in range(3):
            assert (await api.post(URL, json=BODY, headers=ALICE)).status_code == 200

    assert layered_calls == [("POST", URL)]


@pytest.mark.parametrize("path", ["/api/conversations", "/api/chat/"])
async def test_other_requests_go_through_the_routing_layers(
    make_api: MakeApi, tmp_path: Path, layered_calls: list[tuple[str, str]], path: str
) -> None:
    async with make_api(settings(tmp_path)) as api:
        first = await api.post(path, json={}, headers=ALICE)
        second = await api.post(path, json={}, headers=ALICE)

    assert first.status_code == second.status_code
    assert layered_calls.count(("POST", path)) == 2
