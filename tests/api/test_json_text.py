"""JSON text inside a request (a function_call's arguments, a tool's output) is read as
JSON, not as Python's superset of it: `NaN` there is not a number to store but text that
does not parse, so what a reload shows is what the answer showed, on SQLite and Postgres
(SQLite turned a NaN output into "" and NaN arguments into null on reload)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from tests.fakes.db import ApiClient
from tests.support.loopback import served


@pytest.fixture
async def base(api: ApiClient) -> AsyncIterator[str]:
    async with served(api.app) as url:
        yield url


def _by_type(items: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {item["type"]: item for item in items}


@pytest.mark.parametrize("output", ["NaN", "-Infinity", '{"score": NaN}'])
async def test_a_non_json_tool_output_comes_back_as_the_text_it_was(base: str, output: str) -> None:
    items = [
        {"type": "function_call", "call_id": "c1", "name": "score", "arguments": '{"x": NaN}'},
        {"type": "function_call_output", "call_id": "c1", "output": output},
    ]
    async with httpx.AsyncClient(base_url=base, timeout=10) as http:
        conversation_id = (await http.post("/v1/conversations", json={})).json()["id"]
        added = await http.post(f"/v1/conversations/{conversation_id}/items", json={"items": items})
        reloaded = await http.get(f"/v1/conversations/{conversation_id}/items")

    assert added.status_code == 200
    answered, stored = _by_type(added.json()["data"]), _by_type(reloaded.json()["data"])
    assert answered["function_call_output"]["output"] == output
    assert stored["function_call_output"]["output"] == output
    assert stored["function_call"]["arguments"] == answered["function_call"]["arguments"]
