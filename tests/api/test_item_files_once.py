"""Inline files (`input_file` `file_data`) added as items, with `conversations.create(items=)`
or `items.create`, or sent in a conversation's Responses turn: stored once, and only when
what refers to them is.

A keyed repeat answers the first request's items and stores no second file; a request
that fails once its file's bytes are written (the conversation busy, the database lost
mid-transaction) leaves no file row and no bytes behind, where the file used to be kept
as the caller's, tied to nothing and never removed."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from app.domain.errors import Unavailable
from app.settings import Settings
from app.store.repos.conversations import ConversationRepo
from app.store.repos.messages import MessageRepo
from tests.api.test_idempotent_uploads import blobs, files_kept
from tests.fakes.db import ApiClient

CSV = b"city,rate\nOslo,1\n"
ITEM: dict[str, Any] = {
    "type": "message",
    "role": "user",
    "content": [
        {"type": "input_text", "text": "see the rates"},
        {
            "type": "input_file",
            "filename": "rates.csv",
            "file_data": "data:text/csv;base64," + base64.b64encode(CSV).decode(),
        },
    ],
}


async def _conversation(api: ApiClient) -> str:
    created = await api.post("/v1/conversations", json={})
    assert created.status_code == 200, created.text
    return str(created.json()["id"])


async def test_items_sent_again_under_their_key_store_no_second_file(
    api: ApiClient, app_settings: Settings
) -> None:
    conversation_id = await _conversation(api)
    url = f"/v1/conversations/{conversation_id}/items"
    key = {"Idempotency-Key": "items-1"}

    first = await api.post(url, json={"items": [ITEM]}, headers=key)
    again = await api.post(url, json={"items": [ITEM]}, headers=key)

    assert first.status_code == again.status_code == 200, again.text
    assert again.json() == first.json()
    assert await files_kept(api) == 1
    assert len(blobs(app_settings)) == 1
    listed = (await api.get(f"{url}?order=asc")).json()["data"]
    assert len(listed) == 1


async def test_a_conversation_created_again_under_its_key_stores_no_second_file(
    api: ApiClient, app_settings: Settings
) -> None:
    key = {"Idempotency-Key": "conv-1"}

    first = await api.post("/v1/conversations", json={"items": [ITEM]}, headers=key)
    again = await api.post("/v1/conversations", json={"items": [ITEM]}, headers=key)

    assert first.status_code == again.status_code == 200, again.text
    assert again.json()["id"] == first.json()["id"]
    assert await files_kept(api) == 1
    assert len(blobs(app_settings)) == 1


async def test_items_refused_while_a_run_is_active_leave_no_file(
    api: ApiClient, app_settings: Settings
) -> None:
    conversation_id = await _conversation(api)
    async with api.services.db.sessions.begin() as session:
        await ConversationRepo(session).claim_active_run(
            api.services.settings.local_user_id, conversation_id, "run_live"
        )

    refused = await api.post(f"/v1/conversations/{conversation_id}/items", json={"items": [ITEM]})

    assert refused.status_code == 409, refused.text
    assert refused.json()["error"]["code"] == "run_active"
    assert await files_kept(api) == 0
    assert blobs(app_settings) == []


@pytest.mark.parametrize("keyed", [False, True])
async def test_items_whose_transaction_fails_after_the_file_is_written_leave_no_file(
    api: ApiClient, app_settings: Settings, monkeypatch: pytest.MonkeyPatch, keyed: bool
) -> None:
    conversation_id = await _conversation(api)

    async def lost(*_args: Any, **_kwargs: Any) -> None:
        raise Unavailable("The database went away.")

    monkeypatch.setattr(MessageRepo, "append", lost)
    headers = {"Idempotency-Key": "items-lost"} if keyed else {}
    url = f"/v1/conversations/{conversation_id}/items"
    failed = await api.post(url, json={"items": [ITEM]}, headers=headers)
    created = await api.post("/v1/conversations", json={"items": [ITEM]}, headers=headers)

    assert failed.status_code == created.status_code == 503, failed.text
    assert await files_kept(api) == 0
    assert blobs(app_settings) == []


async def test_a_turn_refused_while_a_run_is_active_leaves_no_file(
    api: ApiClient, app_settings: Settings
) -> None:
    conversation_id = await _conversation(api)
    async with api.services.db.sessions.begin() as session:
        await ConversationRepo(session).claim_active_run(
            api.services.settings.local_user_id, conversation_id, "run_live"
        )

    body = {"model": "scripted", "conversation": conversation_id, "input": [ITEM]}
    refused = await api.post("/v1/responses", json=body)

    assert refused.status_code == 409, refused.text
    assert await files_kept(api) == 0
    assert blobs(app_settings) == []


async def test_a_turn_whose_transaction_fails_after_the_file_is_written_leaves_no_file(
    api: ApiClient, app_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    conversation_id = await _conversation(api)

    async def lost(*_args: Any, **_kwargs: Any) -> None:
        raise Unavailable("The database went away.")

    monkeypatch.setattr(MessageRepo, "append", lost)
    body = {"model": "scripted", "conversation": conversation_id, "input": [ITEM]}
    failed = await api.post("/v1/responses", json=body, headers={"Idempotency-Key": "turn-1"})

    assert failed.status_code == 503, failed.text
    assert await files_kept(api) == 0
    assert blobs(app_settings) == []
