"""A list cursor is opaque but comes back from the client: a forged one (a timestamp at
the calendar's edge, an id no database column can hold) is a 400 naming the cursor, never
a 500, on SQLite and Postgres, over real HTTP on loopback."""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from tests.fakes.db import ApiClient
from tests.support.loopback import served

CONVERSATIONS = "/api/conversations"


@pytest.fixture
async def base(api: ApiClient) -> AsyncIterator[str]:
    async with served(api.app) as url:
        yield url


def _forged(value: Any) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")


FORGED_CURSORS = {
    "a lone surrogate id": ["2026-12-02T00:00:00+00:00", "\ud800"],
    "a NUL in the id": ["2026-12-02T00:00:00+00:00", "conv_\u0000"],
    "year 1 east of UTC": ["0001-01-01T00:00:00+14:00", "conv_x"],
    "year 9999 west of UTC": ["9999-12-31T23:59:59-14:00", "conv_x"],
}


@pytest.mark.parametrize("forged", FORGED_CURSORS.values(), ids=FORGED_CURSORS.keys())
async def test_a_forged_list_cursor_is_invalid_cursor(base: str, forged: list[str]) -> None:
    async with httpx.AsyncClient(base_url=base, timeout=10) as http:
        assert (await http.post(CONVERSATIONS, json={})).status_code == 201
        response = await http.get(CONVERSATIONS, params={"cursor": _forged(forged)})

    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_cursor"


@pytest.mark.parametrize("at", ["0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-14:00"])
async def test_an_audit_cursor_at_the_calendars_edge_is_a_400(base: str, at: str) -> None:
    async with httpx.AsyncClient(base_url=base, timeout=10) as http:
        response = await http.get("/api/admin/audit", params={"cursor": f"{at}|aud_x"})

    assert response.status_code == 400
    assert response.json()["error"]["param"] == "cursor"
