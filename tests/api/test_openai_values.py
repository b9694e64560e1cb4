"""Values OpenAI's API refuses are refused here too, with a 400 `invalid_request_error`
naming the parameter (the openai SDK's `BadRequestError`), before any model is asked:
more than 4 `stop` sequences, a `logit_bias` out of [-100, 100] or keyed by something
other than a token id, a `response_format` type OpenAI does not know or a `json_schema`
without its schema, `stream_options` without `stream`, a seed past 64 bits and an empty
`model`. They were all answered: passed on to a provider that ignored them or refused
them naming nothing, or (an empty model) answered by the default model. The values at
the limits still answer."""

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
from tests.fakes.db import MakeApi

HELLO: list[ChatCompletionMessageParam] = [{"role": "user", "content": "Hi"}]


@pytest.fixture
async def sdk(make_api: MakeApi, tmp_path: Path) -> AsyncIterator[AsyncOpenAI]:
    answers = ScriptedProvider(
        Script(mode="rules", turns=[ScriptedTurn(text="Hello.")]), delay_ms=0
    )
    async with make_api(base_settings(tmp_path), providers={"scripted": answers}) as api:
        client = sdk_for(api)
        yield client
        await client.close()


def refused(caught: pytest.ExceptionInfo[openai.BadRequestError], param: str) -> dict[str, Any]:
    assert caught.value.status_code == 400
    body = caught.value.body
    assert isinstance(body, dict)
    assert body["type"] == "invalid_request_error"
    assert body["param"] == param, body
    return body


@pytest.mark.parametrize(
    ("fields", "param", "code"),
    [
        ({"stop": ["a", "b", "c", "d", "e"]}, "stop", "array_above_max_length"),
        ({"logit_bias": {"50256": 101}}, "logit_bias", "invalid_value"),
        ({"logit_bias": {"50256": -100.5}}, "logit_bias", "invalid_value"),
        ({"logit_bias": {"hello": 5}}, "logit_bias", "invalid_value"),
        ({"response_format": {"type": "xml"}}, "response_format.type", "invalid_value"),
        (
            {"response_format": {"type": "json_schema"}},
            "response_format.json_schema",
            "missing_required_parameter",
        ),
        ({"stream_options": {"include_usage": True}}, "stream_options", "invalid_value"),
        ({"seed": 2**64}, "seed", None),
    ],
    ids=lambda value: str(value)[:40],
)
async def test_a_value_openai_refuses_is_a_400_naming_its_parameter(
    sdk: AsyncOpenAI, fields: dict[str, Any], param: str, code: str | None
) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        await sdk.chat.completions.create(model="scripted", messages=HELLO, extra_body=fields)

    body = refused(caught, param)
    if code is not None:
        assert body["code"] == code


async def test_stream_options_without_stream_are_refused_as_the_sdk_sends_them(
    sdk: AsyncOpenAI,
) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        await sdk.chat.completions.create(
            model="scripted", messages=HELLO, stream_options={"include_usage": True}
        )
    refused(caught, "stream_options")


async def test_an_empty_model_is_refused_not_answered_by_the_default(sdk: AsyncOpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as chat:
        await sdk.chat.completions.create(model="", messages=HELLO)
    refused(chat, "model")
    with pytest.raises(openai.BadRequestError) as responses:
        await sdk.responses.create(model="", input="Hi")
    refused(responses, "model")


async def test_values_at_the_limits_still_answer(sdk: AsyncOpenAI) -> None:
    answer = await sdk.chat.completions.create(
        model="scripted",
        messages=HELLO,
        stop=["a", "b", "c", "d"],
        logit_bias={"50256": -100, "9906": 100},
        seed=2**63 - 1,
        response_format={
            "type": "json_schema",
            "json_schema": {"name": "reply", "schema": {"type": "object"}},
        },
    )
    assert answer.choices[0].message.content == "Hello."
    stream = await sdk.chat.completions.create(
        model="scripted", messages=HELLO, stream=True, stream_options={"include_usage": True}
    )
    chunks = [chunk async for chunk in stream]
    assert chunks[-1].usage is not None
