"""A file sent inline (`file_data`, a data URL) in a stateless turn (`/v1/responses`
without a conversation, `/v1/chat/completions`, `/api/chat`) is read for that request
only: the model gets its text (or, for a vision model, its bytes), and nothing is stored.

Stored, such a file was the caller's file with no conversation: listed nowhere, removed by
nothing, counted against the caller's quota for ever, and stored again at every resend of
the history the client keeps."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from app.domain.parts import FilePart
from app.providers.scripted import Script, ScriptedProvider, ScriptedTurn
from app.settings import Settings
from tests.api.test_file_turns import VISION, _last_user
from tests.api.test_idempotent_uploads import blobs, files_kept
from tests.fakes.db import ApiClient, MakeApi
from tests.files import samples

CSV_URL = "data:text/csv;base64," + base64.b64encode(samples.CSV_QUOTED).decode()
ROW = '| Smith, Ada | said "hello", then left | 12.5 |'


def _responses(url: str) -> tuple[str, dict[str, Any]]:
    content = [
        {"type": "input_text", "text": "who said hello?"},
        {"type": "input_file", "filename": "people.csv", "file_data": url},
    ]
    return "/v1/responses", {"model": "scripted", "input": [{"role": "user", "content": content}]}


def _chat_completions(url: str) -> tuple[str, dict[str, Any]]:
    content = [
        {"type": "text", "text": "who said hello?"},
        {"type": "file", "file": {"filename": "people.csv", "file_data": url}},
    ]
    return "/v1/chat/completions", {
        "model": "scripted",
        "messages": [{"role": "user", "content": content}],
    }


def _provider(api: ApiClient) -> ScriptedProvider:
    provider = ScriptedProvider(Script(mode="rules", turns=[ScriptedTurn(text="Ada.")]), delay_ms=0)
    api.services.providers["scripted"] = provider
    return provider


@pytest.mark.parametrize("request_for", [_responses, _chat_completions])
async def test_a_stateless_turns_inline_file_reaches_the_model_and_is_stored_nowhere(
    api: ApiClient, app_settings: Settings, request_for: Any
) -> None:
    provider = _provider(api)
    path, body = request_for(CSV_URL)

    first = await api.post(path, json=body)
    again = await api.post(path, json=body)  # the client resends its history

    assert first.status_code == again.status_code == 200, again.text
    assert ROW in _last_user(provider).text()
    assert "base64" not in _last_user(provider).text()
    assert await files_kept(api) == 0
    assert blobs(app_settings) == []


async def test_a_stateless_turns_inline_file_uses_none_of_the_quota(
    make_api: MakeApi, app_settings: Settings
) -> None:
    settings = app_settings.model_copy(update={"upload_quota_bytes": 10})
    async with make_api(settings) as api:
        provider = _provider(api)
        path, body = _responses(CSV_URL)
        answer = await api.post(path, json=body)

    assert answer.status_code == 200, answer.text
    assert ROW in _last_user(provider).text()


async def test_a_stateless_turns_inline_image_reaches_a_vision_model_as_its_bytes(
    make_api: MakeApi, app_settings: Settings
) -> None:
    settings = app_settings.model_copy(
        update={"models_json": json.dumps([VISION]), "default_model": "scripted-vision"}
    )
    url = "data:image/png;base64," + base64.b64encode(samples.png()).decode()
    content = [
        {"type": "input_text", "text": "what colour?"},
        {"type": "input_image", "image_url": url},
    ]
    async with make_api(settings) as api:
        provider = _provider(api)
        answer = await api.post(
            "/v1/responses", json={"input": [{"role": "user", "content": content}]}
        )
        kept = await files_kept(api)

    assert answer.status_code == 200, answer.text
    images = [p for p in _last_user(provider).parts() if isinstance(p, FilePart)]
    assert [image.data.url for image in images] == [url]
    assert kept == 0
    assert blobs(settings) == []
