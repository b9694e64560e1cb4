"""A turn's history is counted before it is read: past `MAX_MESSAGES` (default 2048,
OpenAI's own cap on Chat Completions messages) a request is a 400 naming the list, in
OpenAI's words, whatever its messages hold; at the cap it is served."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx2
import openai
import pytest

from app.settings import Settings
from tests.fakes.db import ApiClient, MakeApi

TINY: Any = {"role": "user", "content": "a"}


@pytest.fixture
async def api(make_api: MakeApi, app_settings: Settings) -> AsyncIterator[ApiClient]:
    async with make_api(app_settings.model_copy(update={"default_model": "scripted"})) as client:
        yield client


@pytest.fixture
async def sdk(api: ApiClient) -> AsyncIterator[openai.AsyncOpenAI]:
    http = httpx2.AsyncClient(transport=httpx2.ASGITransport(app=api.app), base_url="http://t")
    client = openai.AsyncOpenAI(
        api_key="unused", base_url="http://t/v1", http_client=http, max_retries=0
    )
    async with client:
        yield client


def _too_long(field: str, got: int, cap: int = 2048) -> str:
    return (
        f"Invalid '{field}': array too long. Expected an array with maximum length {cap}, "
        f"but got an array with length {got} instead."
    )


async def test_chat_completions_past_2048_messages_is_400_naming_messages(
    sdk: openai.AsyncOpenAI,
) -> None:
    served = await sdk.chat.completions.create(model="scripted", messages=[TINY] * 2048)
    with pytest.raises(openai.BadRequestError) as refused:
        await sdk.chat.completions.create(model="scripted", messages=[TINY] * 2049)

    assert served.choices[0].message.content
    assert refused.value.body == {
        "message": _too_long("messages", 2049),
        "type": "invalid_request_error",
        "param": "messages",
        "code": "array_above_max_length",
    }


async def test_responses_past_2048_input_items_is_400_naming_input(
    sdk: openai.AsyncOpenAI,
) -> None:
    served = await sdk.responses.create(model="scripted", input=[TINY] * 2048)
    with pytest.raises(openai.BadRequestError) as refused:
        await sdk.responses.create(model="scripted", input=[TINY] * 2049)

    assert served.output_text
    error: Any = refused.value.body
    assert (error["code"], error["param"]) == ("array_above_max_length", "input")


@pytest.mark.parametrize("path", ["/api/chat", "/api/ui/chat", "/api/agui"])
async def test_the_native_turn_routes_refuse_a_long_history_before_reading_it(
    make_api: MakeApi, app_settings: Settings, path: str
) -> None:
    # Messages no route would take: the count answers first, so nothing walked them.
    settings = app_settings.model_copy(update={"max_messages": 3})
    async with make_api(settings) as api:
        response = await api.post(path, json={"messages": [{"role": 7}] * 4})

    assert response.status_code == 400, response.text
    assert response.json()["error"] == {
        "code": "array_above_max_length",
        "message": _too_long("messages", 4, cap=3),
        "param": "messages",
    }


# --- content parts, all messages together -------------------------------------------------


def _parts(count: int, kind: str = "text") -> Any:
    return {"role": "user", "content": [{"type": kind, "text": "a"}] * count}


async def test_chat_completions_past_8192_content_parts_is_400_naming_messages(
    sdk: openai.AsyncOpenAI,
) -> None:
    # 2,048 messages of 17 tiny parts fit in 1 MB and held the event loop for 0.5 s and more.
    served = await sdk.chat.completions.create(model="scripted", messages=[_parts(4)] * 2048)
    with pytest.raises(openai.BadRequestError) as refused:
        await sdk.chat.completions.create(
            model="scripted", messages=[_parts(4)] * 2047 + [_parts(5)]
        )

    assert served.choices[0].message.content
    assert refused.value.body == {
        "message": "Invalid 'messages': too many content parts. Expected at most 8192 content "
        "parts across all messages, but got 8193 instead.",
        "type": "invalid_request_error",
        "param": "messages",
        "code": "content_parts_above_max",
    }


async def test_responses_past_8192_content_parts_is_400_naming_input(
    sdk: openai.AsyncOpenAI,
) -> None:
    with pytest.raises(openai.BadRequestError) as refused:
        await sdk.responses.create(model="scripted", input=[_parts(17, "input_text")] * 500)

    error: Any = refused.value.body
    assert (error["code"], error["param"]) == ("content_parts_above_max", "input")


@pytest.mark.parametrize(("path", "field"), [("/api/chat", "content"), ("/api/ui/chat", "parts")])
async def test_the_native_turn_routes_count_content_parts_before_reading_them(
    make_api: MakeApi, app_settings: Settings, path: str, field: str
) -> None:
    # Parts no route would take: the count answers first, so nothing read them.
    settings = app_settings.model_copy(update={"max_content_parts": 3})
    async with make_api(settings) as api:
        message = {"role": "user", field: [{"type": 7}] * 2}
        response = await api.post(path, json={"messages": [message] * 2})

    assert response.status_code == 400, response.text
    assert response.json()["error"]["code"] == "content_parts_above_max"
    assert response.json()["error"]["param"] == "messages"
