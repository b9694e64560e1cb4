"""`metadata` on `/v1` objects holds to OpenAI's limits (16 pairs, keys up to 64
characters, string values up to 512) and is refused the way OpenAI refuses it: a 400 the
openai SDK raises as BadRequestError, with OpenAI's `code` and `param`. Driven through the
official SDK on SQLite and Postgres."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx2
import openai
import pytest

from app.providers.scripted import Script, ScriptedProvider, ScriptedTurn
from app.settings import Settings
from tests.fakes.db import MakeApi

AT_THE_LIMITS = {f"{i:02d}".ljust(64, "k"): "v" * 512 for i in range(16)}
TOO_MANY = {f"k{i}": "v" for i in range(17)}
LONG_KEY = {"k" * 65: "v"}
LONG_VALUE = {"ok": "v", "note": "x" * 513}


@pytest.fixture
async def sdk(make_api: MakeApi, app_settings: Settings) -> AsyncIterator[openai.AsyncOpenAI]:
    settings = app_settings.model_copy(update={"default_model": "scripted"})
    provider = ScriptedProvider(Script(turns=[ScriptedTurn(text="Hi.")]), delay_ms=0)
    async with make_api(settings, providers={"scripted": provider}) as api:
        http = httpx2.AsyncClient(transport=httpx2.ASGITransport(app=api.app), base_url="http://t")
        client = openai.AsyncOpenAI(
            api_key="unused", base_url="http://t/v1", http_client=http, max_retries=0
        )
        async with client:
            yield client


Send = Callable[[openai.AsyncOpenAI, dict[str, str]], Awaitable[Any]]


async def _create(sdk: openai.AsyncOpenAI, metadata: dict[str, str]) -> Any:
    return await sdk.conversations.create(metadata=metadata)


async def _update(sdk: openai.AsyncOpenAI, metadata: dict[str, str]) -> Any:
    conversation = await sdk.conversations.create(metadata={"kept": "yes"})
    try:
        return await sdk.conversations.update(conversation.id, metadata=metadata)
    finally:
        kept = await sdk.conversations.retrieve(conversation.id)
        assert kept.metadata in ({"kept": "yes"}, metadata)


async def _respond(sdk: openai.AsyncOpenAI, metadata: dict[str, str]) -> Any:
    return await sdk.responses.create(input="hello", metadata=metadata)


SENDS = pytest.mark.parametrize("send", [_create, _update, _respond], ids=lambda s: s.__name__)


async def _refusal(sdk: openai.AsyncOpenAI, send: Send, metadata: dict[str, str]) -> Any:
    """The error body of `metadata` sent, after metadata at every limit went through."""
    accepted = await send(sdk, AT_THE_LIMITS)
    assert accepted.metadata == AT_THE_LIMITS
    with pytest.raises(openai.BadRequestError) as refused:
        await send(sdk, metadata)
    assert refused.value.status_code == 400
    return refused.value.body


@SENDS
async def test_more_than_16_pairs_are_refused_naming_metadata(
    sdk: openai.AsyncOpenAI, send: Send
) -> None:
    error = await _refusal(sdk, send, TOO_MANY)
    assert error["code"] == "object_above_max_properties"
    assert error["param"] == "metadata"
    assert error["type"] == "invalid_request_error"
    assert "at most 16 properties" in error["message"] and "17" in error["message"]


@SENDS
async def test_a_key_over_64_characters_is_refused(sdk: openai.AsyncOpenAI, send: Send) -> None:
    error = await _refusal(sdk, send, LONG_KEY)
    assert error["code"] == "string_above_max_length"
    assert error["param"] == "metadata"
    assert "maximum length 64" in error["message"] and "65" in error["message"]


@SENDS
async def test_a_value_over_512_characters_is_refused_naming_its_key(
    sdk: openai.AsyncOpenAI, send: Send
) -> None:
    error = await _refusal(sdk, send, LONG_VALUE)
    assert error["code"] == "string_above_max_length"
    assert error["param"] == "metadata.note"
    assert "maximum length 512" in error["message"] and "513" in error["message"]


async def test_a_key_with_braces_is_named_as_sent(sdk: openai.AsyncOpenAI) -> None:
    error = await _refusal(sdk, _create, {"{limit} {got}": "x" * 600})
    assert error["param"] == "metadata.{limit} {got}"
    assert "'metadata.{limit} {got}'" in error["message"]
