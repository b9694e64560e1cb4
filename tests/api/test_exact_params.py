"""Values the OpenAPI schema types are read as it states them, and the schema states what
is read: a boolean query parameter is `true` or `false`, a `Last-Event-ID` is the `id:`
the stream emitted (digits, or `<feed>.<seq>`), a tool's name is 1-64 letters, digits,
`_` or `-`. Anything else is refused, naming the value, instead of read loosely."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest

from tests.fakes.db import ApiClient


async def _conversation(api: ApiClient) -> str:
    created = await api.post("/api/conversations", json={})
    assert created.status_code == 201, created.text
    cid: str = created.json()["id"]
    return cid


async def _finished_run_events_url(api: ApiClient) -> str:
    cid = await _conversation(api)
    started = await api.post(f"/api/conversations/{cid}/messages", json={"content": "Hi"})
    assert started.status_code == 202, started.text
    url: str = started.json()["events_url"]
    await api.get(url)  # reads to run_end: the run has finished
    return url


def _header_pattern(api: ApiClient, path: str, name: str = "Last-Event-ID") -> str:
    operation = api.app.openapi()["paths"][path]["get"]
    parameter = next(p for p in operation["parameters"] if p["name"] == name)
    pattern: str = parameter["schema"]["pattern"]
    return pattern


@pytest.mark.parametrize("last_event_id", ["+2", "-0", "2_0", "0x2"])
async def test_a_last_event_id_that_is_not_digits_is_400_on_a_runs_events(
    api: ApiClient, last_event_id: str
) -> None:
    url = await _finished_run_events_url(api)

    response = await api.get(url, headers={"Last-Event-ID": last_event_id})
    resumed = await api.get(url, headers={"Last-Event-ID": "2"})

    assert response.status_code == 400, response.text
    assert response.json()["error"]["param"] == "Last-Event-ID"
    assert resumed.status_code == 200
    pattern = _header_pattern(api, "/api/conversations/{conversation_id}/runs/{run_id}/events")
    assert re.fullmatch(pattern, "2") and not re.fullmatch(pattern, last_event_id)


@pytest.mark.parametrize("last_event_id", ["+1", "1_0", "-0"])
async def test_a_last_event_id_that_is_not_digits_is_400_on_the_queue_feed(
    api: ApiClient, last_event_id: str
) -> None:
    # A feed that accepted the value would stay open: the guard turns that into a failure.
    response = await asyncio.wait_for(
        api.get("/api/queue/events", headers={"Last-Event-ID": last_event_id}), 60
    )

    assert response.status_code == 400, response.text
    assert response.json()["error"]["param"] == "Last-Event-ID"
    pattern = _header_pattern(api, "/api/queue/events")
    assert not re.fullmatch(pattern, last_event_id)


@pytest.mark.parametrize("position", ["+1.2", "1.+2", "1_0.2", "1.2\t"])
async def test_a_conversation_feed_position_that_is_not_feed_dot_seq_is_400(
    api: ApiClient, position: str
) -> None:
    cid = await _conversation(api)

    response = await asyncio.wait_for(
        api.get(f"/api/conversations/{cid}/events", params={"after": position}), 60
    )

    assert response.status_code == 400, response.text
    assert response.json()["error"]["param"] == "after"
    pattern = _header_pattern(api, "/api/conversations/{conversation_id}/events", "after")
    assert not re.fullmatch(pattern, position)


@pytest.mark.parametrize("stream", ["yes", "1", "on", "TRUE", "true "])
async def test_a_v1_boolean_query_parameter_is_true_or_false(api: ApiClient, stream: str) -> None:
    refused = await api.get("/v1/responses/resp_unknown", params={"stream": stream})
    read = await api.get("/v1/responses/resp_unknown", params={"stream": "true"})

    assert refused.status_code == 400, refused.text
    assert refused.json()["error"]["type"] == "invalid_request_error"
    assert "stream" in refused.json()["error"]["param"]
    assert read.status_code == 404  # accepted, and the response is not there


@pytest.mark.parametrize("stream", [True, False])
async def test_a_python_bool_in_params_is_read_as_python_http_clients_send_it(
    api: ApiClient, stream: bool
) -> None:
    # python-requests and httpx send a bool in `params` as `True` / `False`.
    response = await api.get("/v1/responses/resp_unknown", params={"stream": str(stream)})

    assert response.status_code == 404, response.text  # accepted, and the response is not there


def _tool(name: str) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "parameters": {"type": "object"}}}


@pytest.mark.parametrize("name", ["lookup\n", "a" * 65, "look up"])
async def test_a_tool_name_outside_the_pattern_is_refused_on_both_surfaces(
    api: ApiClient, name: str
) -> None:
    messages = [{"role": "user", "content": "Hi"}]

    native = await api.post("/api/chat", json={"messages": messages, "tools": [_tool(name)]})
    compatible = await api.post(
        "/v1/chat/completions",
        json={"model": "scripted", "messages": messages, "tools": [_tool(name)]},
    )

    assert native.status_code == 422, native.text
    assert native.json()["error"]["code"] == "validation_error"
    assert compatible.status_code == 400, compatible.text
    assert compatible.json()["error"]["param"] == "tools[0]"
    schema = api.app.openapi()["components"]["schemas"]["FunctionDef"]
    assert not re.fullmatch(schema["properties"]["name"]["pattern"], name)
