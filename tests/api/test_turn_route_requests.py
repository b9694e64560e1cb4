"""The stateless turn routes (`/api/chat`, `/v1/chat/completions`, `/v1/responses`) take
their ordinary requests past FastAPI's generic solver (`app.api.direct_handler`); every
other request is answered as FastAPI answers it, and the caller is counted once."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from fastapi import HTTPException, Request
from pydantic import SecretStr

from app.api.deps import get_turn
from tests.auth.tokens import HS_SECRET, bearer, hs_token, sqlite_settings
from tests.fakes.db import MakeApi

ALICE = bearer(hs_token(sub="alice"))
HI = [{"role": "user", "content": "Hi"}]
ROUTES = {
    "/api/chat": {"messages": HI},
    "/v1/chat/completions": {"model": "scripted", "messages": HI},
    "/v1/responses": {"model": "scripted", "input": "Hi"},
}
REFUSED = {"/api/chat": 422, "/v1/chat/completions": 400, "/v1/responses": 400}  # OpenAI's 400


def settings(tmp_path: Path, **values: Any) -> Any:
    return sqlite_settings(tmp_path, jwt_secret=SecretStr(HS_SECRET), **values)


@pytest.mark.parametrize("url", ROUTES)
async def test_a_refused_body_counts_once_against_the_callers_rate(
    make_api: MakeApi, tmp_path: Path, url: str
) -> None:
    async with make_api(settings(tmp_path, rate_limit_requests_per_minute=2)) as api:
        refused = await api.post(url, json={"messages": "not a list"}, headers=ALICE)
        answered = await api.post(url, json=ROUTES[url], headers=ALICE)
        over = await api.post(url, json=ROUTES[url], headers=ALICE)

    assert [refused.status_code, answered.status_code, over.status_code] == [REFUSED[url], 200, 429]


@pytest.mark.parametrize("url", ROUTES)
async def test_a_chunked_body_over_the_limit_is_413(
    make_api: MakeApi, tmp_path: Path, url: str
) -> None:
    async def chunks() -> AsyncIterator[bytes]:
        yield b'{"messages": [{"role": "user", "content": "'
        for _ in range(10):
            yield b"x" * 100
        yield b'"}]}'

    async with make_api(settings(tmp_path, max_body_bytes=100, upload_max_bytes=10)) as api:
        response = await api.post(
            url, content=chunks(), headers={**ALICE, "Content-Type": "application/json"}
        )

    assert response.status_code == 413
    assert response.json()["error"]["code"] == "payload_too_large"


@pytest.mark.parametrize("url", ROUTES)
@pytest.mark.parametrize("content_type", ["text/plain", "application/json; charset=utf-8"])
async def test_a_body_is_read_as_json_by_its_content_type_alone(
    make_api: MakeApi, tmp_path: Path, url: str, content_type: str
) -> None:
    async with make_api(settings(tmp_path)) as api:
        response = await api.post(
            url,
            content=json.dumps(ROUTES[url]).encode(),
            headers={**ALICE, "Content-Type": content_type},
        )

    if content_type == "text/plain":  # FastAPI's rule: not JSON, so no model validates it
        assert response.status_code == REFUSED[url]
    else:
        assert response.status_code == 200, response.text


@pytest.mark.parametrize("url", ["/api/chat", "/v1/chat/completions"])
async def test_dependency_overrides_still_apply(
    make_api: MakeApi, tmp_path: Path, url: str
) -> None:
    async def closed(request: Request) -> Any:
        raise HTTPException(503, "closed for the test")

    async with make_api(settings(tmp_path)) as api:
        api.app.dependency_overrides[get_turn] = closed
        response = await api.post(url, json=ROUTES[url], headers=ALICE)

    assert response.status_code == 503


@pytest.mark.parametrize("url", ROUTES)
async def test_a_fastapi_without_the_telemetry_internal_still_serves_every_request(
    make_api: MakeApi, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, url: str
) -> None:
    # The direct path asks FastAPI's internal telemetry module whether a request is traced;
    # a FastAPI release without it leaves the routes to FastAPI's own handler, answering.
    monkeypatch.setitem(sys.modules, "fastapi.telemetry._api", None)

    async with make_api(settings(tmp_path, rate_limit_requests_per_minute=2)) as api:
        refused = await api.post(url, json={"messages": "not a list"}, headers=ALICE)
        answered = await api.post(url, json=ROUTES[url], headers=ALICE)
        over = await api.post(url, json=ROUTES[url], headers=ALICE)

    assert [refused.status_code, answered.status_code, over.status_code] == [REFUSED[url], 200, 429]
