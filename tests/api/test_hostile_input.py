"""What a hostile or careless client can send, sent over real HTTP on loopback: each gets a
clear 4xx with the machine-readable error body, never a 500, on SQLite and Postgres.

`NaN` / `Infinity` are not JSON (RFC 8259) though Python's parser takes them: Postgres
JSONB refuses them and no JSON encoder may write them back, so a body holding one (a
client tool's schema, a tool result) is `invalid_json`, and nothing is stored. So is a
number too large for a float, which Python's parser silently made the same infinity.

A body nested a few hundred levels deep parsed, then its run failed with an internal error
(pydantic encodes at most 255 levels): it is refused up front, saying how deep is too deep.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from tests.fakes.db import ApiClient
from tests.support.loopback import served

CONVERSATIONS = "/api/conversations"
JSON = {"content-type": "application/json"}
# A client tool whose JSON Schema carries a NaN default: Python parses it, nothing stores it.
NAN_TOOLS = (
    b'"tools": [{"type": "function", "function": {"name": "pick", "parameters": '
    b'{"type": "object", "properties": {"x": {"type": "number", "default": NaN}}}}}]'
)


@pytest.fixture
async def base(api: ApiClient) -> AsyncIterator[str]:
    async with served(api.app) as url:
        yield url


async def _conversation(http: httpx.AsyncClient) -> str:
    response = await http.post(CONVERSATIONS, json={})
    assert response.status_code == 201
    return str(response.json()["id"])


async def _send_to_a_new_conversation(base: str, fields: bytes) -> tuple[httpx.Response, Any]:
    """POST a message of `{"content": "hi", <fields>}` (raw bytes) to a new conversation;
    the answer and the conversation as stored afterwards."""
    async with httpx.AsyncClient(base_url=base, timeout=10) as http:
        conversation_id = await _conversation(http)
        response = await http.post(
            f"{CONVERSATIONS}/{conversation_id}/messages",
            content=b'{"content": "hi", ' + fields + b"}",
            headers=JSON,
        )
        stored = (await http.get(f"{CONVERSATIONS}/{conversation_id}")).json()
    return response, stored


async def test_nan_in_a_client_tool_schema_is_invalid_json_and_nothing_is_stored(
    base: str,
) -> None:
    response, stored = await _send_to_a_new_conversation(base, NAN_TOOLS)

    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_json"
    assert stored["messages"] == []
    assert stored["active_run_id"] is None


@pytest.mark.parametrize("constant", [b"NaN", b"Infinity", b"-Infinity"])
async def test_non_finite_numbers_are_invalid_json_on_the_openai_surface(
    base: str, constant: bytes
) -> None:
    body = (
        b'{"model": "scripted", "messages": [{"role": "user", "content": "hi"}], '
        b'"temperature": ' + constant + b"}"
    )
    async with httpx.AsyncClient(base_url=base, timeout=10) as http:
        response = await http.post("/v1/chat/completions", content=body, headers=JSON)

    assert response.status_code == 400
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error"
    assert error["code"] == "invalid_json"


@pytest.mark.parametrize("number", [b"1e999", b"-1e999", b"1" + b"0" * 400 + b".5"])
async def test_a_number_too_large_for_a_float_is_invalid_json_and_nothing_is_stored(
    base: str, number: bytes
) -> None:
    async with httpx.AsyncClient(base_url=base, timeout=10) as http:
        response = await http.post(
            CONVERSATIONS, content=b'{"metadata": {"n": ' + number + b"}}", headers=JSON
        )
        listed = (await http.get(CONVERSATIONS)).json()

    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_json"
    assert listed["data"] == []


async def test_a_nan_tool_result_is_invalid_json(base: str) -> None:
    body = b'{"results": [{"toolCallId": "call_1", "status": "success", "result": NaN}]}'
    async with httpx.AsyncClient(base_url=base, timeout=10) as http:
        conversation_id = await _conversation(http)
        response = await http.post(
            f"{CONVERSATIONS}/{conversation_id}/tool-results", content=body, headers=JSON
        )

    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_json"


def _nested_schema(levels: int) -> bytes:
    return b'{"type": "object", "properties": ' * levels + b"{}" + b"}" * levels


@pytest.mark.parametrize("levels", [150, 300])
async def test_a_body_nested_too_deep_is_refused_before_any_run(base: str, levels: int) -> None:
    tools = b'[{"type": "function", "function": {"name": "deep", "parameters": %s}}]' % (
        _nested_schema(levels)
    )
    response, stored = await _send_to_a_new_conversation(base, b'"tools": ' + tools)

    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid_request"
    assert "deeper than 100 levels" in error["message"]
    assert stored["messages"] == []


@pytest.mark.parametrize(
    "body",
    [
        b'{"title": "\xff\xfe"}',  # not UTF-8
        b'{"metadata": {"n": 1' + b"0" * 5000 + b"}}",  # more digits than Python converts
    ],
    ids=["not-utf8", "5001-digits"],
)
async def test_a_body_python_cannot_read_is_invalid_json(base: str, body: bytes) -> None:
    async with httpx.AsyncClient(base_url=base, timeout=10) as http:
        response = await http.post(CONVERSATIONS, content=body, headers=JSON)
        listed = (await http.get(CONVERSATIONS)).json()

    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_json"
    assert listed["data"] == []


async def test_a_body_too_deep_for_the_parser_says_how_deep_is_too_deep(base: str) -> None:
    body = b'{"metadata": {"a": ' + b"[" * 5000 + b"]" * 5000 + b"}}"
    async with httpx.AsyncClient(base_url=base, timeout=10) as http:
        response = await http.post(CONVERSATIONS, content=body, headers=JSON)

    assert response.status_code == 400
    assert "deeper than 100 levels" in response.json()["error"]["message"]


async def test_a_deeply_nested_but_reasonable_schema_still_runs(base: str) -> None:
    tools = b'[{"type": "function", "function": {"name": "deep", "parameters": %s}}]' % (
        _nested_schema(40)
    )
    async with httpx.AsyncClient(base_url=base, timeout=10) as http:
        conversation_id = await _conversation(http)
        started = await http.post(
            f"{CONVERSATIONS}/{conversation_id}/messages",
            content=b'{"content": "hi", "tools": ' + tools + b"}",
            headers={**JSON, "accept": "text/event-stream"},
        )

    assert started.status_code == 200
    assert '"status":"completed"' in started.text.rsplit("event: run_end", 1)[1]


async def test_a_body_nested_too_deep_is_a_bad_request_on_the_openai_surface(base: str) -> None:
    body = (
        b'{"model": "scripted", "messages": [{"role": "user", "content": "hi"}], "tools": '
        b'[{"type": "function", "function": {"name": "deep", "parameters": %s}}]}'
        % _nested_schema(300)
    )
    async with httpx.AsyncClient(base_url=base, timeout=10) as http:
        response = await http.post("/v1/chat/completions", content=body, headers=JSON)

    assert response.status_code == 400
    assert response.json()["error"]["type"] == "invalid_request_error"
