"""The OpenAI-compatible bodies take each typed field in its JSON type only, as OpenAI's
API does: `"stream": "yes"` streamed, `"n": true` or `"max_tokens": "5"` were read as
numbers. Now each is a 400 `invalid_request_error` naming the field (the openai SDK's
`BadRequestError`), and the proper values still work."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import openai
import pytest
from openai import AsyncOpenAI
from openai.types.chat import ChatCompletionMessageParam

from app.providers.scripted import Script, ScriptedProvider, ScriptedTurn
from tests.api.test_openai_compat import base_settings, sdk_for
from tests.fakes.db import ApiClient, MakeApi

HELLO: list[ChatCompletionMessageParam] = [{"role": "user", "content": "Hi"}]


@pytest.fixture
async def sdk(make_api: MakeApi, tmp_path: Path) -> AsyncIterator[AsyncOpenAI]:
    answers = ScriptedProvider(
        Script(mode="rules", turns=[ScriptedTurn(text="Hello.")]), delay_ms=0
    )
    api: ApiClient
    async with make_api(base_settings(tmp_path), providers={"scripted": answers}) as api:
        client = sdk_for(api)
        yield client
        await client.close()


@pytest.mark.parametrize(
    ("field", "loose"),
    [
        ("stream", "yes"),
        ("stream", "true"),
        ("stream", 1),
        ("n", True),
        ("n", "1"),
        ("max_tokens", "5"),
        ("max_tokens", 5.0),
        ("max_completion_tokens", "5"),
        ("temperature", "0.5"),
        ("temperature", False),
        ("top_p", "1"),
        ("seed", "7"),
        ("logprobs", "false"),
        ("parallel_tool_calls", 0),
    ],
)
async def test_a_chat_completion_field_in_another_json_type_is_a_400(
    sdk: AsyncOpenAI, field: str, loose: Any
) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        await sdk.chat.completions.create(
            model="scripted", messages=HELLO, extra_body={field: loose}
        )

    assert caught.value.status_code == 400
    assert isinstance(caught.value.body, dict)
    assert caught.value.body["type"] == "invalid_request_error"
    assert caught.value.body["param"] == field


@pytest.mark.parametrize(
    ("field", "loose"),
    [("stream", "yes"), ("max_output_tokens", "5"), ("temperature", "1"), ("store", "no")],
)
async def test_a_responses_field_in_another_json_type_is_a_400(
    sdk: AsyncOpenAI, field: str, loose: Any
) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        await sdk.responses.create(model="scripted", input="Hi", extra_body={field: loose})

    assert caught.value.status_code == 400
    assert isinstance(caught.value.body, dict)
    assert caught.value.body["param"] == field


async def test_the_proper_types_still_answer(sdk: AsyncOpenAI) -> None:
    # An integer where a number belongs is a number in JSON: temperature 1 is fine.
    completion = await sdk.chat.completions.create(
        model="scripted", messages=HELLO, temperature=1, top_p=1, max_tokens=5, n=1, seed=7
    )
    stream = await sdk.chat.completions.create(model="scripted", messages=HELLO, stream=True)
    chunks = [chunk async for chunk in stream]
    response = await sdk.responses.create(
        model="scripted", input="Hi", temperature=0.5, max_output_tokens=16, store=False
    )

    assert completion.choices[0].message.content
    assert chunks and chunks[0].object == "chat.completion.chunk"
    assert response.output_text
