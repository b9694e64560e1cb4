"""Every OpenAI parameter is forwarded, translated for Anthropic, or refused with a 400
naming it; none is dropped silently. Driven through the official openai SDK, with fake
OpenAI and Anthropic upstreams recording what each was asked."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
import openai
import pytest
from openai import AsyncOpenAI
from pydantic import BaseModel, SecretStr

from app.api.openai_params import chat_options
from app.api.schemas.openai_chat import ChatCompletionRequest
from app.domain.stream import GenerationOptions
from app.settings import Settings
from tests.fakes.anthropic_upstream import AnthropicUpstream, MessageSpec, Text
from tests.fakes.db import ApiClient, MakeApi
from tests.fakes.openai_upstream import Completion, FakeOpenAIUpstream

CATALOGUE = json.dumps(
    [
        {"id": "gpt", "provider": "openai", "upstream_model": "gpt-4o-mini"},
        {"id": "claude", "provider": "anthropic", "upstream_model": "claude-haiku-4-5"},
    ]
)
ASK: Any = [{"role": "user", "content": "Weather in Oslo?"}]
NOOP: Any = [{"type": "function", "function": {"name": "noop", "parameters": {}}}]


class Weather(BaseModel):
    city: str
    celsius: int


@pytest.fixture
async def api(
    make_api: MakeApi,
    tmp_path: Path,
    openai_upstream: FakeOpenAIUpstream,
    anthropic_upstream: AnthropicUpstream,
) -> AsyncIterator[ApiClient]:
    settings = Settings(
        _env_file=None,
        database_url=f"sqlite+aiosqlite:///{tmp_path / 'params.db'}",
        environment="test",
        log_json=False,
        models_json=CATALOGUE,
        openai_api_key=SecretStr("sk-test"),
        openai_base_url=openai_upstream.base_url,
        anthropic_api_key=SecretStr("sk-ant-test"),
        anthropic_base_url=anthropic_upstream.base_url,
        provider_max_retries=0,
    )
    async with make_api(settings) as client:
        yield client


@pytest.fixture
async def sdk(api: ApiClient) -> AsyncIterator[AsyncOpenAI]:
    http = httpx2.AsyncClient(transport=httpx2.ASGITransport(app=api.app), base_url="http://test")
    client = AsyncOpenAI(
        base_url="http://test/v1", api_key="sk-not-used", http_client=http, max_retries=0
    )
    yield client
    await client.close()


def anthropic_body(upstream: AnthropicUpstream) -> dict[str, Any]:
    body: dict[str, Any] = upstream.requests[-1].json
    return body


async def test_openai_parameters_reach_an_openai_model_as_sent(
    sdk: AsyncOpenAI, openai_upstream: FakeOpenAIUpstream
) -> None:
    openai_upstream.enqueue(Completion(text="Fine."))

    await sdk.chat.completions.create(
        model="gpt",
        messages=ASK,
        stop=["\n\n"],
        top_p=0.5,
        seed=7,
        response_format={"type": "json_object"},
        reasoning_effort="low",
        logprobs=True,
        top_logprobs=2,
        frequency_penalty=0.5,
        presence_penalty=0.25,
        logit_bias={"50256": -100},
        user="end-user-1",
        parallel_tool_calls=False,
        tools=NOOP,
    )

    sent = openai_upstream.request_bodies()[-1]
    assert sent["stop"] == ["\n\n"]
    assert sent["top_p"] == 0.5
    assert sent["seed"] == 7
    assert sent["response_format"] == {"type": "json_object"}
    assert sent["reasoning_effort"] == "low"
    assert (sent["logprobs"], sent["top_logprobs"]) == (True, 2)
    assert (sent["frequency_penalty"], sent["presence_penalty"]) == (0.5, 0.25)
    assert sent["logit_bias"] == {"50256": -100}
    assert sent["user"] == "end-user-1"
    assert sent["parallel_tool_calls"] is False


async def test_the_sdks_parse_gets_structured_output_from_an_openai_model(
    sdk: AsyncOpenAI, openai_upstream: FakeOpenAIUpstream
) -> None:
    openai_upstream.enqueue(Completion(text='{"city": "Oslo", "celsius": 4}'))

    completion = await sdk.chat.completions.parse(
        model="gpt",
        messages=ASK,
        response_format=Weather,
    )

    assert completion.choices[0].message.parsed == Weather(city="Oslo", celsius=4)
    sent = openai_upstream.request_bodies()[-1]["response_format"]
    assert sent["type"] == "json_schema"
    assert sent["json_schema"]["name"] == "Weather"
    assert set(sent["json_schema"]["schema"]["properties"]) == {"city", "celsius"}


async def test_openai_parameters_are_translated_for_an_anthropic_model(
    sdk: AsyncOpenAI, anthropic_upstream: AnthropicUpstream
) -> None:
    anthropic_upstream.message(MessageSpec([Text('{"city": "Oslo", "celsius": 4}')]))

    completion = await sdk.chat.completions.parse(
        model="claude",
        messages=ASK,
        response_format=Weather,
        stop="END",
        top_p=0.9,
        reasoning_effort="minimal",
        user="end-user-2",
    )

    assert completion.choices[0].message.parsed == Weather(city="Oslo", celsius=4)
    sent = anthropic_body(anthropic_upstream)
    assert sent["stop_sequences"] == ["END"]
    assert sent["top_p"] == 0.9
    assert sent["metadata"] == {"user_id": "end-user-2"}
    assert sent["output_config"]["effort"] == "low"
    assert sent["output_config"]["format"]["type"] == "json_schema"
    assert set(sent["output_config"]["format"]["schema"]["properties"]) == {"city", "celsius"}


@pytest.mark.parametrize(
    ("param", "value"),
    [("seed", 1), ("logprobs", True), ("frequency_penalty", 0.5), ("logit_bias", {"1": 1})],
)
async def test_a_parameter_anthropic_has_no_equivalent_for_is_a_400_naming_it(
    sdk: AsyncOpenAI, anthropic_upstream: AnthropicUpstream, param: str, value: Any
) -> None:
    with pytest.raises(openai.BadRequestError) as refused:
        await sdk.chat.completions.create(
            model="claude",
            messages=ASK,
            extra_body={param: value},
        )

    assert refused.value.body["param"] == param  # type: ignore[index]
    assert param in refused.value.message
    assert anthropic_upstream.requests == []


async def test_neutral_values_are_no_request_at_all(
    sdk: AsyncOpenAI, anthropic_upstream: AnthropicUpstream
) -> None:
    anthropic_upstream.message(MessageSpec([Text("Fine.")]))

    await sdk.chat.completions.create(
        model="claude",
        messages=ASK,
        n=1,
        logprobs=False,
        frequency_penalty=0,
        presence_penalty=0,
        store=False,
    )

    assert "frequency_penalty" not in anthropic_body(anthropic_upstream)


async def test_an_unknown_parameter_is_refused_not_ignored(
    sdk: AsyncOpenAI, openai_upstream: FakeOpenAIUpstream
) -> None:
    with pytest.raises(openai.BadRequestError) as refused:
        await sdk.chat.completions.create(
            model="gpt",
            messages=ASK,
            extra_body={"temprature": 0.1},
        )

    assert refused.value.body["param"] == "temprature"  # type: ignore[index]
    assert refused.value.code == "unsupported_parameter"
    assert openai_upstream.request_bodies() == []


async def test_responses_text_format_and_reasoning_reach_the_model(
    sdk: AsyncOpenAI, openai_upstream: FakeOpenAIUpstream
) -> None:
    openai_upstream.enqueue(Completion(text='{"city": "Oslo", "celsius": 4}'))

    response = await sdk.responses.parse(
        model="gpt",
        input="Weather in Oslo?",
        text_format=Weather,
        reasoning={"effort": "medium"},
        top_p=0.3,
    )

    assert response.output_parsed == Weather(city="Oslo", celsius=4)
    sent = openai_upstream.request_bodies()[-1]
    assert sent["response_format"]["type"] == "json_schema"
    assert sent["response_format"]["json_schema"]["name"] == "Weather"
    assert sent["reasoning_effort"] == "medium"
    assert sent["top_p"] == 0.3


async def test_a_model_the_callers_roles_do_not_allow_is_404_like_an_unknown_one(
    make_api: MakeApi, tmp_path: Path
) -> None:
    restricted = json.dumps(
        [
            {"id": "scripted", "provider": "scripted", "upstream_model": "s"},
            {"id": "staff", "provider": "scripted", "upstream_model": "s", "roles": ["staff"]},
        ]
    )
    settings = Settings(
        _env_file=None,
        database_url=f"sqlite+aiosqlite:///{tmp_path / 'roles.db'}",
        environment="test",
        models_json=restricted,
        local_user_id="someone",
    )
    async with make_api(settings) as api:
        # The development caller has the roles user and admin, not staff.
        staff = await api.get("/v1/models/staff")
        unknown = await api.get("/v1/models/nobody")

    assert staff.status_code == unknown.status_code == 404
    assert staff.json()["error"]["code"] == unknown.json()["error"]["code"]


async def test_a_model_is_retrieved_by_id_in_openais_shape(sdk: AsyncOpenAI) -> None:
    model = await sdk.models.retrieve("claude")

    assert (model.id, model.object, model.owned_by) == ("claude", "model", "anthropic")
    with pytest.raises(openai.NotFoundError):
        await sdk.models.retrieve("no-such-model")


REFUSED = "This request triggered restrictions on violative cyber content"


async def test_an_anthropic_refusal_is_content_filter_for_openai_clients(
    sdk: AsyncOpenAI, anthropic_upstream: AnthropicUpstream
) -> None:
    anthropic_upstream.replay("refusal")  # recorded from the real API
    anthropic_upstream.replay("refusal")

    whole = await sdk.chat.completions.create(model="claude", messages=ASK)
    stream = await sdk.chat.completions.create(
        model="claude",
        messages=ASK,
        stream=True,
    )
    chunks = [chunk async for chunk in stream]

    assert whole.choices[0].finish_reason == "content_filter"
    assert (whole.choices[0].message.refusal or "").startswith(REFUSED)
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices]
    assert finishes[-1] == "content_filter"
    refusal = "".join(c.choices[0].delta.refusal or "" for c in chunks if c.choices)
    assert refusal.startswith(REFUSED)


async def test_an_anthropic_refusal_is_marked_on_the_native_chat(
    api: ApiClient, anthropic_upstream: AnthropicUpstream
) -> None:
    anthropic_upstream.replay("refusal")

    answer = await api.post("/api/chat", json={"model": "claude", "messages": ASK})

    body = answer.json()
    assert body["choices"][0]["finish_reason"] == "content_filter"
    assert body["message"]["metadata"]["finish_reason"] == "content_filter"
    assert body["message"]["metadata"]["refusal"].startswith(REFUSED)


async def test_an_ask_above_the_models_output_cap_goes_upstream_at_the_cap(
    sdk: AsyncOpenAI, openai_upstream: FakeOpenAIUpstream, anthropic_upstream: AnthropicUpstream
) -> None:
    # Both catalogue entries keep the default cap of 4096: a larger ask went upstream as
    # sent, where the provider refused it or it overran the context fitted to the cap.
    openai_upstream.enqueue(Completion(text="Fine."))
    anthropic_upstream.message(MessageSpec(blocks=[Text("Fine.")]))

    await sdk.chat.completions.create(model="gpt", messages=ASK, max_tokens=10**30)
    await sdk.chat.completions.create(model="claude", messages=ASK, max_completion_tokens=50_000)

    assert openai_upstream.request_bodies()[-1]["max_tokens"] == 4096
    assert anthropic_body(anthropic_upstream)["max_tokens"] == 4096


def test_requests_that_set_no_options_share_one_and_others_keep_their_own() -> None:
    # A run (and its stream) holds its request's options to its end: ~1 KB each, and
    # nearly no request sets any.
    plain = [ChatCompletionRequest.model_validate({"model": "gpt", "messages": ASK}) for _ in "ab"]
    assert chat_options(plain[0]) is chat_options(plain[1])
    assert chat_options(plain[0]) == GenerationOptions()
    tuned = ChatCompletionRequest.model_validate({"model": "gpt", "messages": ASK, "top_p": 0.5})
    assert chat_options(tuned).top_p == 0.5
    assert chat_options(tuned) is not chat_options(plain[0])


async def test_an_answer_stopped_at_the_token_limit_finishes_length_for_openai_clients(
    sdk: AsyncOpenAI, anthropic_upstream: AnthropicUpstream
) -> None:
    for _ in range(2):
        anthropic_upstream.message(MessageSpec([Text("It goes on and")], stop_reason="max_tokens"))

    whole = await sdk.chat.completions.create(model="claude", messages=ASK, max_tokens=5)
    stream = await sdk.chat.completions.create(
        model="claude", messages=ASK, max_tokens=5, stream=True
    )
    chunks = [chunk async for chunk in stream]

    assert (whole.choices[0].finish_reason, whole.choices[0].message.content) == (
        "length",
        "It goes on and",
    )
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "length"
