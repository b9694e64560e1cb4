"""Chat Completions `messages` are typed (a union on `role`) on `/v1/chat/completions` and
`/api/chat`, and still take every message shape the openai SDK sends."""

from __future__ import annotations

import json
from typing import Any

import pytest

from app.openapi_dump import TARGET
from app.providers.scripted import ScriptedTurn
from tests.api.runs.helpers import play
from tests.fakes.db import ApiClient

SPEC: dict[str, Any] = json.loads(TARGET.read_text())
NOTE = "data:application/json;base64,eyJza3kiOiAiY2xlYXIifQ=="
# What the openai SDK sends for a conversation with every role and content shape.
HISTORY: list[dict[str, Any]] = [
    {"role": "developer", "content": "Be brief."},
    {"role": "system", "content": [{"type": "text", "text": "Answer in English."}]},
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "What does the note say?"},
            {"type": "file", "file": {"file_data": NOTE, "filename": "note.json"}},
        ],
        "name": "ada",
    },
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": '{"sky": "clear"}'},
    {"role": "assistant", "content": [{"type": "refusal", "refusal": "No more."}]},
    {"role": "user", "content": "And now?"},
]
WEATHER = {"type": "function", "function": {"name": "get_weather", "parameters": {}}}


@pytest.mark.parametrize("url", ["/v1/chat/completions", "/api/chat"])
async def test_every_role_and_content_shape_of_the_sdk_is_accepted(
    api: ApiClient, url: str
) -> None:
    provider = play(api, ScriptedTurn(text="Sunny."))

    response = await api.post(
        url, json={"model": "scripted", "messages": HISTORY, "tools": [WEATHER]}
    )

    assert response.status_code == 200, response.text
    seen = provider.requests[0].messages
    assert [m.role for m in seen] == ["system", "system", "user", "assistant", "assistant", "user"]
    assert seen[3].parts()[0].data.result == {"sky": "clear"}  # type: ignore[union-attr]
    assert seen[4].text() == "No more."


async def test_aikit_typed_parts_are_accepted_on_api_chat(api: ApiClient) -> None:
    provider = play(api, ScriptedTurn(text="Hey."))
    message = {"id": "m1", "role": "user", "content": [{"type": "text", "data": {"text": "Hi"}}]}

    response = await api.post("/api/chat", json={"messages": [message]})

    assert response.status_code == 200, response.text
    assert provider.requests[0].messages[0].text() == "Hi"


@pytest.mark.parametrize(("url", "status"), [("/v1/chat/completions", 400), ("/api/chat", 422)])
async def test_an_unknown_role_is_refused_naming_the_message(
    api: ApiClient, url: str, status: int
) -> None:
    messages = [{"role": "user", "content": "Hi"}, {"role": "wizard", "content": "Hi"}]

    response = await api.post(url, json={"model": "scripted", "messages": messages})

    assert response.status_code == status, response.text
    assert "messages.1" in response.text or "messages[1]" in response.text


@pytest.mark.parametrize("url", ["/v1/chat/completions", "/api/chat"])
@pytest.mark.parametrize("field", ["owner_id", "api_key", "base_url"])
async def test_a_field_smuggled_into_a_message_is_still_forbidden(
    api: ApiClient, url: str, field: str
) -> None:
    message = {"role": "user", "content": "Hi", field: "evil"}

    response = await api.post(url, json={"model": "scripted", "messages": [message]})

    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["code"] == "forbidden_field" and error["param"] == f"messages[0].{field}"


@pytest.mark.parametrize("request_model", ["ChatCompletionRequest", "ChatRequest"])
def test_the_document_types_messages_as_a_union_on_role(request_model: str) -> None:
    schemas = SPEC["components"]["schemas"]
    items = schemas[request_model]["properties"]["messages"]["items"]

    assert items["discriminator"]["propertyName"] == "role"
    assert set(items["discriminator"]["mapping"]) == {
        "system",
        "developer",
        "user",
        "assistant",
        "tool",
    }
    assert schemas["ToolMessageIn"]["required"] == ["role", "tool_call_id", "content"]
