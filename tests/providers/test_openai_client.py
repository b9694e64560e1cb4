"""The templated OpenAI client sends exactly the requests the SDK's own client would."""

from __future__ import annotations

from typing import Any

import httpx2
import openai
import pytest
from openai._base_client import get_platform
from openai._legacy_response import LegacyAPIResponse
from openai._models import FinalRequestOptions

from app.domain.messages import Message
from app.domain.stream import ModelRequest
from app.providers.openai import OpenAIProvider
from app.providers.openai_client import TemplatedOpenAI
from tests.fakes.openai_upstream import Completion, FakeOpenAIUpstream, rate_limited
from tests.support.non_streaming import fold

KEY = "sk-canary-openai-0123456789"


def clients() -> tuple[openai.AsyncOpenAI, TemplatedOpenAI]:
    settings: dict[str, Any] = {
        "api_key": KEY,
        "base_url": "http://127.0.0.1:9/v1",
        "timeout": httpx2.Timeout(30.0, connect=5.0),
        "max_retries": 2,
    }
    stock, templated = openai.AsyncOpenAI(**settings), TemplatedOpenAI(**settings)
    stock._platform = templated._platform = get_platform()  # set by the SDK's first request
    return stock, templated


def built(client: openai.AsyncOpenAI, body: Any, retries: int = 0, **extra: Any) -> httpx2.Request:
    options = FinalRequestOptions.construct(
        method="post",
        url="/chat/completions",
        json_data=body,
        security={"bearer_auth": True},
        **extra,
    )
    return client._build_request(options, retries_taken=retries)


def wire(request: httpx2.Request) -> tuple[Any, ...]:
    return (
        request.method,
        str(request.url),
        request.headers.raw,  # names as sent, in order
        request.content,
        request.extensions,
    )


def body(text: str) -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": "user", "content": text}], "stream": True}


@pytest.mark.parametrize("retries", [0, 1])
def test_each_request_matches_the_sdks_own_for_every_body(retries: int) -> None:
    stock, templated = clients()
    for text in ("Hi", "a much longer question, é and 漢字 included", ""):
        assert wire(built(templated, body(text), retries)) == wire(
            built(stock, body(text), retries)
        )


def test_per_call_headers_are_the_sdks_to_build() -> None:
    stock, templated = clients()
    built(templated, body("warm"))
    extra: dict[str, Any] = {"headers": {"X-Trace": "1"}}
    assert wire(built(templated, body("Hi"), **extra)) == wire(built(stock, body("Hi"), **extra))
    assert built(templated, body("Hi"), **extra).headers["x-trace"] == "1"


def test_a_new_api_key_is_sent_from_the_next_request_on() -> None:
    _, templated = clients()
    built(templated, body("Hi"))
    templated.api_key = "sk-rotated"
    assert built(templated, body("Hi")).headers["authorization"] == "Bearer sk-rotated"


def test_the_user_agent_names_the_sdks_client() -> None:
    stock, templated = clients()
    assert templated.user_agent == stock.user_agent


async def test_a_retried_request_says_which_retry_it_is(
    openai_upstream: FakeOpenAIUpstream,
) -> None:
    provider = OpenAIProvider(
        api_key=KEY,
        base_url=openai_upstream.base_url,
        timeout=5.0,
        connect_timeout=2.0,
        max_retries=2,
    )
    openai_upstream.enqueue(rate_limited(0.01), Completion(text="ok"), Completion(text="ok"))
    request = ModelRequest(model="gpt-4o-mini", messages=[Message(role="user", content="Hi")])
    try:
        await fold(provider.stream(request))
        await fold(provider.stream(request))
    finally:
        await provider.aclose()
    first, retried, later = openai_upstream.requests
    assert [r.headers["x-stainless-retry-count"] for r in (first, retried, later)] == [
        "0",
        "1",
        "0",
    ]
    assert first.body == retried.body == later.body
    assert retried.headers["authorization"] == f"Bearer {KEY}"


async def test_post_stream_asks_the_sdk_for_what_post_would() -> None:
    _, templated = clients()
    asked: list[tuple[Any, FinalRequestOptions, Any]] = []

    async def request(cast_to: Any, options: FinalRequestOptions, **kwargs: Any) -> Any:
        asked.append((cast_to, options, kwargs))

    templated.request = request  # type: ignore[method-assign]
    for text in ("Hi", "again"):
        await templated.post_stream("/chat/completions", body(text))
        await templated.post(
            "/chat/completions",
            body=body(text),
            cast_to=httpx2.Response,
            options={"security": {"bearer_auth": True}},
            stream=True,
        )
    for (ours_to, ours, ours_stream), (sdk_to, sdk, sdk_stream) in zip(
        asked[::2], asked[1::2], strict=True
    ):
        assert (ours_to, ours_stream) == (sdk_to, sdk_stream)
        assert ours.model_fields_set == sdk.model_fields_set
        assert _given(ours) == _given(sdk)


def _given(options: FinalRequestOptions) -> dict[str, Any]:
    return {k: v for k, v in vars(options).items() if not isinstance(v, openai.NotGiven)}


def test_a_client_with_an_idempotency_header_still_sends_a_fresh_key() -> None:
    stock, templated = clients()
    for client in (stock, templated):
        client._idempotency_header = "Idempotency-Key"
    keys = {templated._idempotency_key() for _ in range(3)}
    assert len(keys) == 3
    assert all(key.startswith("stainless-python-retry-") for key in keys)
    extra: dict[str, Any] = {"idempotency_key": keys.pop()}
    sent = built(templated, body("Hi"), **extra)
    assert wire(sent) == wire(built(stock, body("Hi"), **extra))
    assert sent.headers["idempotency-key"] == extra["idempotency_key"]


def _answering(**settings: Any) -> TemplatedOpenAI:
    def answer(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, content=b"data: [DONE]\n\n")

    http = httpx2.AsyncClient(transport=httpx2.MockTransport(answer))
    client = TemplatedOpenAI(
        api_key=KEY, base_url="http://127.0.0.1:9/v1", http_client=http, **settings
    )
    client._platform = get_platform()
    return client


async def test_a_plain_streamed_post_answers_the_transports_response_unprocessed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def unreachable(self: Any, **kwargs: Any) -> Any:
        raise AssertionError("the SDK's response processing")

    monkeypatch.setattr(openai.AsyncOpenAI, "_process_response", unreachable)
    response = await _answering().post_stream("/chat/completions", body("Hi"))
    assert type(response) is httpx2.Response
    assert await response.aread() == b"data: [DONE]\n\n"


async def test_a_streamed_post_answers_what_the_sdks_post_does() -> None:
    client = _answering()
    ours = await client.post_stream("/chat/completions", body("Hi"))
    sdk = await client.post(
        "/chat/completions",
        body=body("Hi"),
        cast_to=httpx2.Response,
        options={"security": {"bearer_auth": True}},
        stream=True,
    )
    assert type(ours) is type(sdk) is httpx2.Response
    assert (ours.status_code, ours.headers.raw) == (sdk.status_code, sdk.headers.raw)


async def test_a_raw_response_header_leaves_the_answer_to_the_sdk() -> None:
    client = _answering(default_headers={"X-Stainless-Raw-Response": "true"})
    answer: object = await client.post_stream("/chat/completions", body("Hi"))
    assert isinstance(answer, LegacyAPIResponse)  # what the SDK's processing gives
    assert answer.http_request.headers["x-stainless-raw-response"] == "true"
