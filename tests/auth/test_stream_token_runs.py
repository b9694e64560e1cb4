"""A stream token for a run is minted only for one of the caller's own runs: an unknown run
id, or another user's, is the same 404 every request naming an unknown run gets. Minting
used to succeed for any id, so a client with a stale or mistyped id got a token that
opened nothing, and learned so only when its EventSource failed. On SQLite and Postgres."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from pydantic import SecretStr

from app.settings import Settings
from tests.auth.tokens import HS_SECRET, bearer, hs_token
from tests.fakes.db import ApiClient, MakeApi

ALICE = bearer(hs_token(sub="alice"))
BOB = bearer(hs_token(sub="bob"))


@pytest.fixture
async def api(make_api: MakeApi, app_settings: Settings) -> AsyncIterator[ApiClient]:
    settings = app_settings.model_copy(update={"jwt_secret": SecretStr(HS_SECRET)})
    async with make_api(settings) as client:
        yield client


async def alices_run(api: ApiClient) -> dict[str, Any]:
    created = await api.post("/api/conversations", json={}, headers=ALICE)
    cid = created.json()["id"]
    sent = await api.post(
        f"/api/conversations/{cid}/messages", json={"content": "hi"}, headers=ALICE
    )
    assert sent.status_code == 202, sent.text
    started: dict[str, Any] = sent.json()
    return started


async def test_a_token_for_an_unknown_run_is_404(api: ApiClient) -> None:
    response = await api.post("/api/stream-tokens", json={"run_id": "run_nope"}, headers=ALICE)

    assert response.status_code == 404, response.text
    assert response.json()["error"]["code"] == "not_found"
    assert "token" not in response.json()


async def test_a_token_for_another_users_run_is_the_same_404_as_an_unknown_one(
    api: ApiClient,
) -> None:
    run_id = (await alices_run(api))["run_id"]

    bobs = await api.post("/api/stream-tokens", json={"run_id": run_id}, headers=BOB)
    unknown = await api.post("/api/stream-tokens", json={"run_id": "run_nope"}, headers=BOB)

    assert bobs.status_code == 404, bobs.text
    assert bobs.json() == unknown.json()


async def test_a_token_for_ones_own_run_opens_its_events(api: ApiClient) -> None:
    started = await alices_run(api)

    minted = await api.post("/api/stream-tokens", json={"run_id": started["run_id"]}, headers=ALICE)

    assert minted.status_code == 200, minted.text
    events = await api.get(started["events_url"], params={"token": minted.json()["token"]})
    assert events.status_code == 200 and "event: run_end" in events.text
