"""Typed fields of the native API take their JSON type only: a text, a number or a float
where a boolean or an integer belongs is a 422, never a guess (`"yes"` archived a
conversation, `0` restored it, `"5"` or `5.0` were read as 5 tokens)."""

from __future__ import annotations

from typing import Any

import pytest

from app.providers.scripted import ScriptedTurn
from tests.api.runs.helpers import CONVERSATIONS, conversation, create, play
from tests.fakes.db import ApiClient


def refused(response: Any, param: str) -> None:
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["code"] == "validation_error"
    assert error["param"] == param


@pytest.mark.parametrize("loose", ["yes", "true", "false", 1, 0])
async def test_archived_must_be_a_json_boolean(api: ApiClient, loose: Any) -> None:
    cid = await create(api)
    before = await conversation(api, cid)

    refused(await api.patch(f"{CONVERSATIONS}/{cid}", json={"archived": loose}), "archived")

    assert await conversation(api, cid) == before
    archived = await api.patch(f"{CONVERSATIONS}/{cid}", json={"archived": True})
    assert archived.status_code == 200 and archived.json()["archived"] is True


async def test_a_loose_restore_leaves_an_archived_conversation_archived(api: ApiClient) -> None:
    cid = await create(api)
    assert (await api.delete(f"{CONVERSATIONS}/{cid}")).status_code in (200, 204)
    before = await conversation(api, cid)

    refused(await api.patch(f"{CONVERSATIONS}/{cid}", json={"archived": 0}), "archived")

    assert await conversation(api, cid) == before
    restored = await api.patch(f"{CONVERSATIONS}/{cid}", json={"archived": False})
    assert restored.json()["archived"] is False


@pytest.mark.parametrize("loose", [0, 1, "true", "false"])
async def test_a_message_whose_stream_is_not_a_boolean_starts_no_run(
    api: ApiClient, loose: Any
) -> None:
    play(api, ScriptedTurn(text="hello"))
    cid = await create(api)

    response = await api.post(
        f"{CONVERSATIONS}/{cid}/messages", json={"content": "Hi", "stream": loose}
    )

    refused(response, "stream")
    assert (await conversation(api, cid))["message_count"] == 0
    sent = await api.post(
        f"{CONVERSATIONS}/{cid}/messages", json={"content": "Hi", "stream": False}
    )
    assert sent.status_code == 202, sent.text


@pytest.mark.parametrize(
    ("field", "loose"),
    [
        ("stream", "true"),
        ("stream", 1),
        ("temperature", False),
        ("temperature", "0.5"),
        ("max_tokens", "5"),
        ("max_tokens", 5.0),
        ("max_tokens", True),
    ],
)
async def test_a_chat_turn_with_a_loosely_typed_option_calls_no_model(
    api: ApiClient, field: str, loose: Any
) -> None:
    provider = play(api, ScriptedTurn(text="hello"))
    body = {"messages": [{"role": "user", "content": "Hi"}], field: loose}

    refused(await api.post("/api/chat", json=body), field)

    assert not provider.requests
    proper = {"stream": False, "temperature": 1, "max_tokens": 5}
    answered = await api.post("/api/chat", json={**body, field: proper[field]})
    assert answered.status_code == 200, answered.text
    assert len(provider.requests) == 1
