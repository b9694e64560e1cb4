"""The OpenAI provider, driven through the real openai SDK against the fake upstream."""

from __future__ import annotations

import email.utils
import gzip
import time
import types
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, cast

import httpx2
import openai
import pytest

from app.domain.errors import (
    ProviderAuthError,
    ProviderBadRequest,
    ProviderError,
    ProviderRateLimited,
    ProviderTimeout,
    ProviderUnavailable,
)
from app.domain.messages import Message
from app.domain.parts import TextPart, ThinkingPart, ToolPart
from app.domain.stream import ModelRequest, NamedToolChoice, ProviderEvent, TextDelta, ToolSpec
from app.providers import _sse
from app.providers.base import Provider
from app.providers.openai import OpenAIProvider
from app.translate.accumulator import ModelResponse, PartsBuilder
from tests.fakes.openai_upstream import (
    FIXTURES,
    Completion,
    Encoded,
    FakeOpenAIUpstream,
    ToolCall,
    error_reply,
    rate_limited,
    replay,
    server_error,
    unauthorized,
)
from tests.support.non_streaming import completion_to_events, fold

KEY = "sk-canary-openai-0123456789"


def make_provider(upstream: FakeOpenAIUpstream, **overrides: Any) -> OpenAIProvider:
    options: dict[str, Any] = {
        "api_key": KEY,
        "base_url": upstream.base_url,
        "timeout": 5.0,
        "connect_timeout": 2.0,
        "max_retries": 2,
    }
    options.update(overrides)
    return OpenAIProvider(**options)


@pytest.fixture
async def provider(openai_upstream: FakeOpenAIUpstream) -> AsyncIterator[OpenAIProvider]:
    provider = make_provider(openai_upstream)
    yield provider
    await provider.aclose()


def ask(text: str = "Hi", **fields: Any) -> ModelRequest:
    return ModelRequest(
        model="gpt-4o-mini", messages=[Message(role="user", content=text)], **fields
    )


async def answer(provider: OpenAIProvider, request: ModelRequest | None = None) -> ModelResponse:
    return await fold(provider.stream(request or ask()))


def assert_no_key(error: BaseException) -> None:
    for text in (str(error), repr(error), getattr(error, "message", ""), repr(vars(error))):
        assert KEY not in text
        assert "sk-canar" not in text


def test_the_provider_satisfies_the_protocol(openai_upstream: FakeOpenAIUpstream) -> None:
    assert isinstance(make_provider(openai_upstream), Provider)


# --- recorded streams ---------------------------------------------------------------------

RECORDED = [
    pytest.param(
        "openai-chat/gpt-4.1-nano-text.sse",
        [("text", "**Holiday Name:** Harmony Day")],
        ("stop", 16, 300, "gpt-4.1-nano-2025-04-14"),
        id="gpt-4.1-nano-text",
    ),
    pytest.param(
        "openai-chat/gpt-4o-mini-tool-call-then-answer.1.response.sse",
        [("tool", ("call_ZR5UUuTt3pf61kjwAJIYdVMj", "get_capital", {"country": "UK"}))],
        ("tool_calls", 53, 15, "gpt-4o-mini-2024-07-18"),
        id="gpt-4o-mini-tool-call",
    ),
    pytest.param(
        "openai-chat/gpt-4o-mini-tool-call-then-answer.2.response.sse",
        [("text", "The capital of the UK is London.")],
        ("stop", 78, 9, "gpt-4o-mini-2024-07-18"),
        id="gpt-4o-mini-answer-after-tool",
    ),
    pytest.param(
        "openai-compatible/claude-haiku-text-then-tool-call-index-1.sse",
        [("text", "Reading it."), ("tool", ("toolu_sanitized", "read_file", {"path": "a.txt"}))],
        ("tool_calls", 0, 0, "claude-haiku-4-5-20251001"),
        id="compatible-text-then-tool-index-1",
    ),
    pytest.param(
        "openai-compatible/grok-3-mini-reasoning-tool-call.sse",
        [
            ("thinking", "First, the user is asking about the weather in San Francisco."),
            ("tool", ("call_79382389", "weather", {"location": "San Francisco"})),
        ],
        ("tool_calls", 307, 26, "grok-3-mini"),
        id="compatible-reasoning-then-tool",
    ),
]


@pytest.mark.parametrize(("fixture", "expected_parts", "expected_meta"), RECORDED)
async def test_recorded_stream_folds_into_the_expected_parts(
    provider: OpenAIProvider,
    openai_upstream: FakeOpenAIUpstream,
    fixture: str,
    expected_parts: list[tuple[str, Any]],
    expected_meta: tuple[str, int, int, str],
) -> None:
    openai_upstream.enqueue(replay(fixture))
    response = await answer(provider)
    assert len(response.parts) == len(expected_parts)
    for part, (kind, expected) in zip(response.parts, expected_parts, strict=True):
        if kind == "text":
            assert isinstance(part, TextPart)
            assert part.data.text.startswith(expected)
        elif kind == "thinking":
            assert isinstance(part, ThinkingPart)
            assert part.data.content.startswith(expected)
        else:
            assert isinstance(part, ToolPart)
            assert (part.id, part.data.toolName, part.data.args) == expected
            assert part.data.status == "loading"
    finish, prompt, completion, model = expected_meta
    assert response.finish_reason == finish
    assert (response.input_tokens, response.output_tokens) == (prompt, completion)
    assert response.model == model


def test_every_recorded_openai_stream_is_covered() -> None:
    files = {
        str(p.relative_to(FIXTURES))
        for folder in ("openai-chat", "openai-compatible")
        for p in (FIXTURES / folder).glob("*.sse")
    }
    assert files == {p.values[0] for p in RECORDED}


# --- spec-built streams -------------------------------------------------------------------


async def test_text_pieces_arrive_as_text_deltas_and_one_text_part(
    provider: OpenAIProvider, openai_upstream: FakeOpenAIUpstream
) -> None:
    openai_upstream.enqueue(Completion(text=["Hel", "lo, ", "world", "!"]))
    events = [e async for e in provider.stream(ask())]
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Hel", "lo, ", "world", "!"]
    builder = PartsBuilder()
    for event in events:
        builder.feed(event)
    (part,) = builder.build().parts
    assert isinstance(part, TextPart)
    assert part.data.text == "Hello, world!"


async def test_tool_arguments_streamed_in_many_pieces_are_reassembled(
    provider: OpenAIProvider, openai_upstream: FakeOpenAIUpstream
) -> None:
    args = {"query": "weather in Paris tomorrow", "units": "metric", "days": [1, 2, 3]}
    openai_upstream.enqueue(Completion(tool_calls=[ToolCall("search", args, pieces=40)]))
    (part,) = (await answer(provider)).parts
    assert isinstance(part, ToolPart)
    assert part.data.args == args


async def test_interleaved_parallel_tool_calls_land_in_separate_parts(
    provider: OpenAIProvider, openai_upstream: FakeOpenAIUpstream
) -> None:
    openai_upstream.enqueue(
        Completion(
            text="Checking both.",
            tool_calls=[
                ToolCall("weather", {"city": "Paris"}, id="call_a"),
                ToolCall("time", {"tz": "Europe/Paris"}, id="call_b"),
            ],
            interleave=True,
            first_tool_index=1,
        )
    )
    text, first, second = (await answer(provider)).parts
    assert isinstance(text, TextPart)
    assert text.data.text == "Checking both."
    assert isinstance(first, ToolPart)
    assert (first.id, first.data.args) == (
        "call_a",
        {"city": "Paris"},
    )
    assert isinstance(second, ToolPart)
    assert second.data.args == {"tz": "Europe/Paris"}


async def test_usage_chunk_reports_token_counts(
    provider: OpenAIProvider, openai_upstream: FakeOpenAIUpstream
) -> None:
    openai_upstream.enqueue(Completion(text="ok", usage=(120, 45)))
    response = await answer(provider)
    assert (response.input_tokens, response.output_tokens) == (120, 45)


async def test_malformed_tool_json_becomes_an_error_part_that_says_why(
    provider: OpenAIProvider, openai_upstream: FakeOpenAIUpstream
) -> None:
    openai_upstream.enqueue(Completion(tool_calls=[ToolCall("search", '{"q": "unterminated')]))
    (part,) = (await answer(provider)).parts
    assert isinstance(part, ToolPart)
    assert part.data.status == "error"
    assert part.data.bodyContent is not None
    assert "not valid JSON" in part.data.bodyContent


PARITY = [
    pytest.param(Completion(text="Plain answer, several words long."), id="text"),
    pytest.param(Completion(reasoning="Think first.", text="Then answer."), id="reasoning"),
    pytest.param(
        Completion(
            text="Let me look.",
            tool_calls=[ToolCall("a", {"x": 1}, id="c1"), ToolCall("b", {"y": "z"}, id="c2")],
            interleave=True,
        ),
        id="text-and-parallel-tools",
    ),
    pytest.param(Completion(tool_calls=[ToolCall("bad", "{nope", id="c3")]), id="bad-json"),
]


@pytest.mark.parametrize("spec", PARITY)
async def test_stream_and_non_stream_give_identical_parts(
    provider: OpenAIProvider, openai_upstream: FakeOpenAIUpstream, spec: Completion
) -> None:
    openai_upstream.enqueue(spec, spec)
    streamed = await answer(provider)
    async with openai.AsyncOpenAI(api_key=KEY, base_url=openai_upstream.base_url) as client:
        completion = await client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "Hi"}]
        )
    builder = PartsBuilder()
    for event in completion_to_events(completion):
        builder.feed(event)
    whole = builder.build()
    assert [p.model_dump() for p in streamed.parts] == [p.model_dump() for p in whole.parts]
    assert streamed.finish_reason == whole.finish_reason


# --- what we send -------------------------------------------------------------------------


async def test_request_carries_tools_choice_limits_and_usage_option(
    provider: OpenAIProvider, openai_upstream: FakeOpenAIUpstream
) -> None:
    openai_upstream.enqueue(Completion(text="ok"))
    tool = ToolSpec(name="lookup", description="Look it up.", parameters={"type": "object"})
    await answer(
        provider,
        ask(
            tools=[tool],
            tool_choice=NamedToolChoice(name="lookup"),
            max_output_tokens=50,
            temperature=0.2,
        ),
    )
    (body,) = openai_upstream.request_bodies()
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["tools"][0]["function"]["name"] == "lookup"
    assert body["tool_choice"] == {"type": "function", "function": {"name": "lookup"}}
    assert body["temperature"] == 0.2
    assert body["max_tokens"] == 50  # a compatible base URL gets the widely known name


async def test_request_without_tools_sends_no_tool_fields(
    provider: OpenAIProvider, openai_upstream: FakeOpenAIUpstream
) -> None:
    openai_upstream.enqueue(Completion(text="ok"))
    await answer(provider, ask(tool_choice="auto"))
    (body,) = openai_upstream.request_bodies()
    assert "tools" not in body
    assert "tool_choice" not in body
    assert "temperature" not in body


async def test_the_configured_key_is_sent_as_a_bearer_token(
    provider: OpenAIProvider, openai_upstream: FakeOpenAIUpstream
) -> None:
    openai_upstream.enqueue(Completion(text="ok"))
    await answer(provider)
    assert openai_upstream.requests[0].headers["authorization"] == f"Bearer {KEY}"


# --- retries and errors -------------------------------------------------------------------


async def test_rate_limit_is_retried_after_retry_after_then_succeeds(
    provider: OpenAIProvider, openai_upstream: FakeOpenAIUpstream
) -> None:
    openai_upstream.enqueue(rate_limited(0.05), Completion(text="finally"))
    started = time.monotonic()
    response = await answer(provider)
    assert isinstance(response.parts[0], TextPart)
    assert response.parts[0].data.text == "finally"
    assert len(openai_upstream.requests) == 2
    assert time.monotonic() - started >= 0.05


async def test_exhausted_rate_limit_raises_rate_limited_with_retry_after(
    provider: OpenAIProvider, openai_upstream: FakeOpenAIUpstream
) -> None:
    openai_upstream.enqueue(rate_limited(0.02), rate_limited(0.02), rate_limited(0.02))
    with pytest.raises(ProviderRateLimited) as caught:
        await answer(provider)
    assert caught.value.retry_after == pytest.approx(0.02)
    assert caught.value.status == 429
    assert caught.value.retryable
    assert len(openai_upstream.requests) == 3  # the first try and max_retries=2


async def test_server_error_is_retried_then_succeeds(
    provider: OpenAIProvider, openai_upstream: FakeOpenAIUpstream
) -> None:
    openai_upstream.enqueue(server_error(), Completion(text="recovered"))
    response = await answer(provider)
    assert isinstance(response.parts[0], TextPart)
    assert len(openai_upstream.requests) == 2


async def test_persistent_server_error_raises_unavailable_after_the_retries(
    provider: OpenAIProvider, openai_upstream: FakeOpenAIUpstream
) -> None:
    openai_upstream.enqueue(server_error(), server_error(), server_error())
    with pytest.raises(ProviderUnavailable) as caught:
        await answer(provider)
    assert caught.value.status == 502
    assert caught.value.upstream_status == 500
    assert len(openai_upstream.requests) == 3


@pytest.mark.parametrize("status", [408, 504])
async def test_an_upstream_timeout_status_raises_timeout(
    openai_upstream: FakeOpenAIUpstream, status: int
) -> None:
    openai_upstream.enqueue(error_reply(status, "took too long", type="timeout"))
    provider = make_provider(openai_upstream, max_retries=0)
    try:
        with pytest.raises(ProviderTimeout) as caught:
            await answer(provider)
    finally:
        await provider.aclose()
    assert (caught.value.status, caught.value.upstream_status) == (504, status)


async def test_a_rate_limit_until_an_http_date_gives_the_seconds_until_then(
    openai_upstream: FakeOpenAIUpstream,
) -> None:
    until = email.utils.formatdate(time.time() + 30, usegmt=True)
    openai_upstream.enqueue(error_reply(429, "slow down", headers={"retry-after": until}))
    provider = make_provider(openai_upstream, max_retries=0)
    try:
        with pytest.raises(ProviderRateLimited) as caught:
            await answer(provider)
    finally:
        await provider.aclose()
    assert caught.value.retry_after is not None
    assert 25 < caught.value.retry_after <= 30


async def test_rejected_key_raises_auth_error_without_the_key(
    provider: OpenAIProvider, openai_upstream: FakeOpenAIUpstream
) -> None:
    openai_upstream.enqueue(unauthorized(KEY))
    with pytest.raises(ProviderAuthError) as caught:
        await answer(provider)
    assert caught.value.status == 502
    assert isinstance(caught.value.__cause__, openai.AuthenticationError)
    assert_no_key(caught.value)
    assert len(openai_upstream.requests) == 1  # a bad key is not retried


async def test_bad_request_passes_the_upstream_reason_with_secrets_redacted(
    provider: OpenAIProvider, openai_upstream: FakeOpenAIUpstream
) -> None:
    openai_upstream.enqueue(
        error_reply(
            400,
            f"This model's maximum context length is 128000 tokens (key {KEY}, "
            "Bearer abc.def, proxy https://user:pw@proxy.example/v1).",
            code="context_length_exceeded",
        )
    )
    with pytest.raises(ProviderBadRequest) as caught:
        await answer(provider)
    assert caught.value.status == 400
    assert "maximum context length is 128000 tokens" in caught.value.message
    assert_no_key(caught.value)
    assert "abc.def" not in caught.value.message
    assert "user:pw" not in caught.value.message


@pytest.mark.parametrize(
    "reply",
    [
        pytest.param(unauthorized(KEY), id="401"),
        pytest.param(error_reply(403, f"Project key {KEY} lacks access"), id="403"),
        pytest.param(error_reply(404, f"The model does not exist (key {KEY})"), id="404"),
        pytest.param(error_reply(422, f"bad field, sent with {KEY}"), id="422"),
    ],
)
async def test_no_error_we_raise_carries_the_key(
    openai_upstream: FakeOpenAIUpstream, reply: Encoded
) -> None:
    openai_upstream.enqueue(reply)
    provider = make_provider(openai_upstream, max_retries=0)
    try:
        with pytest.raises(ProviderError) as caught:
            await answer(provider)
    finally:
        await provider.aclose()
    assert_no_key(caught.value)
    assert KEY not in str(caught.value.to_body())


async def test_stream_cut_midway_raises_unavailable_and_is_not_retried(
    provider: OpenAIProvider, openai_upstream: FakeOpenAIUpstream
) -> None:
    openai_upstream.enqueue(Completion(text="one two three four five six", cut_after=4))
    seen: list[ProviderEvent] = []

    async def consume() -> None:
        async for event in provider.stream(ask()):
            seen.append(event)

    with pytest.raises(ProviderUnavailable):
        await consume()
    assert any(isinstance(e, TextDelta) for e in seen)
    assert len(openai_upstream.requests) == 1


async def test_a_stream_event_past_the_size_limit_is_unavailable_not_held(
    provider: OpenAIProvider, openai_upstream: FakeOpenAIUpstream, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_sse, "MAX_EVENT_BYTES", 4096, raising=False)
    openai_upstream.enqueue(Completion(text=["Hi ", "x" * 300_000]))  # many reads long
    with pytest.raises(ProviderUnavailable) as caught:
        await answer(provider)
    assert caught.value.retryable
    assert "could not read" in caught.value.message
    assert len(openai_upstream.requests) == 1


async def test_stream_that_ends_without_a_finish_reason_is_unavailable(
    provider: OpenAIProvider, openai_upstream: FakeOpenAIUpstream
) -> None:
    frames = replay("openai-chat/gpt-4o-mini-tool-call-then-answer.2.response.sse").frames
    assert frames is not None
    truncated = [f for f in frames if b'"finish_reason":"stop"' not in f]
    openai_upstream.enqueue(
        Encoded(headers=(("content-type", "text/event-stream"),), frames=tuple(truncated))
    )
    with pytest.raises(ProviderUnavailable):
        await answer(provider)


async def test_error_event_inside_a_stream_raises_unavailable(
    provider: OpenAIProvider, openai_upstream: FakeOpenAIUpstream
) -> None:
    first = Completion(text="partial").streamed.frames
    assert first is not None
    error = b'data: {"error":{"message":"overloaded","type":"server_error"}}\n\n'
    openai_upstream.enqueue(Encoded(frames=(first[0], first[1], error)))
    with pytest.raises(ProviderUnavailable):
        await answer(provider)


async def test_silent_upstream_raises_timeout(openai_upstream: FakeOpenAIUpstream) -> None:
    openai_upstream.enqueue(Completion(text="slow words here", delay=1.0))
    provider = make_provider(openai_upstream, timeout=0.2, max_retries=0)
    try:
        with pytest.raises(ProviderTimeout) as caught:
            await answer(provider)
    finally:
        await provider.aclose()
    assert caught.value.status == 504


async def test_unreachable_upstream_raises_unavailable() -> None:
    provider = OpenAIProvider(
        api_key=KEY, base_url="http://127.0.0.1:9/v1", timeout=1, connect_timeout=1, max_retries=0
    )
    try:
        with pytest.raises(ProviderUnavailable) as caught:
            await answer(provider)
    finally:
        await provider.aclose()
    assert_no_key(caught.value)


# --- the raw stream reader ---------------------------------------------------------------

SSE = (("content-type", "text/event-stream; charset=utf-8"),)


def frames_of(spec: Completion) -> tuple[bytes, ...]:
    frames = spec.streamed.frames
    assert frames is not None
    return frames


def text_of(response: ModelResponse) -> str:
    (part,) = response.parts
    assert isinstance(part, TextPart)
    return part.data.text


async def test_a_crlf_stream_reads_like_an_lf_stream(
    provider: OpenAIProvider, openai_upstream: FakeOpenAIUpstream
) -> None:
    frames = frames_of(Completion(text="one two three"))
    openai_upstream.enqueue(
        Encoded(headers=SSE, frames=tuple(f.replace(b"\n", b"\r\n") for f in frames))
    )
    response = await answer(provider)
    assert text_of(response) == "one two three"
    assert response.finish_reason == "stop"


async def test_frames_split_mid_json_across_network_reads_are_reassembled(
    provider: OpenAIProvider, openai_upstream: FakeOpenAIUpstream
) -> None:
    body = b"".join(frames_of(Completion(text="one two three", usage=(5, 3))))
    pieces = tuple(body[i : i + 7] for i in range(0, len(body), 7))  # 7 bytes per write
    openai_upstream.enqueue(Encoded(headers=SSE, frames=pieces, delay=0.001))
    response = await answer(provider)
    assert text_of(response) == "one two three"
    assert (response.input_tokens, response.output_tokens) == (5, 3)


async def test_comments_pings_and_empty_data_lines_are_skipped(
    provider: OpenAIProvider, openai_upstream: FakeOpenAIUpstream
) -> None:
    first, *rest = frames_of(Completion(text="still here"))
    noise = (b": OPENROUTER PROCESSING\n\n", b"data:\n\n", b"data: \r\n\r\n", b"event: ping\n\n")
    openai_upstream.enqueue(Encoded(headers=SSE, frames=(*noise, first, *noise, *rest)))
    assert text_of(await answer(provider)) == "still here"


async def test_done_ends_the_stream_and_nothing_after_it_is_parsed(
    provider: OpenAIProvider, openai_upstream: FakeOpenAIUpstream
) -> None:
    frames = frames_of(Completion(text="done here"))
    assert frames[-1] == b"data: [DONE]\n\n"
    openai_upstream.enqueue(Encoded(headers=SSE, frames=(*frames, b"data: {not json\n\n")))
    assert text_of(await answer(provider)) == "done here"
    log = await openai_upstream.stream_ended()
    assert log.outcome == "completed"  # drained to the end, not hung up on


async def test_a_body_that_goes_on_after_done_is_left_after_a_tenth_of_a_second(
    provider: OpenAIProvider, openai_upstream: FakeOpenAIUpstream
) -> None:
    frames = frames_of(Completion(text="done here"))
    keep_alives = (b": still here\n\n",) * 40  # two more seconds, 0.05 s apart
    openai_upstream.enqueue(Encoded(headers=SSE, frames=(*frames, *keep_alives), delay=0.05))
    assert text_of(await answer(provider)) == "done here"
    log = await openai_upstream.stream_ended(timeout=1.0)
    assert log.outcome == "client_disconnected"  # not read to its end: the drain gave up


async def test_after_done_the_connection_goes_back_to_the_pool(
    openai_upstream: FakeOpenAIUpstream,
) -> None:
    connections: list[object] = []

    async def on_response(response: httpx2.Response) -> None:
        connections.append(response.extensions.get("network_stream"))

    http = httpx2.AsyncClient(event_hooks={"response": [on_response]})
    provider = make_provider(openai_upstream, http_client=http)
    openai_upstream.enqueue(Completion(text="first"), Completion(text="second"))
    try:
        assert text_of(await answer(provider)) == "first"
        assert text_of(await answer(provider)) == "second"
    finally:
        await provider.aclose()
    first, second = connections
    assert first is not None
    assert first is second


async def test_an_error_payload_in_the_stream_raises_unavailable_with_our_message(
    provider: OpenAIProvider, openai_upstream: FakeOpenAIUpstream
) -> None:
    first, second, *_ = frames_of(Completion(text="partial answer"))
    error = (
        b'data: {"error":{"message":"overloaded for key '
        + KEY.encode()
        + b' Bearer abc.def","type":"server_error"}}\n\n'
    )
    openai_upstream.enqueue(Encoded(headers=SSE, frames=(first, second, error)))
    seen: list[ProviderEvent] = []

    async def consume() -> None:
        async for event in provider.stream(ask()):
            seen.append(event)

    with pytest.raises(ProviderUnavailable) as caught:
        await consume()
    assert any(isinstance(e, TextDelta) for e in seen)
    expected = "The model provider stopped the response mid-stream (server_error)."
    assert caught.value.message == expected
    assert "overloaded" not in str(caught.value.to_body())
    assert "abc.def" not in str(caught.value.to_body())
    assert_no_key(caught.value)
    assert isinstance(caught.value.__cause__, openai.APIError)
    assert len(openai_upstream.requests) == 1  # not retried once the answer has begun


async def test_an_error_event_raises_unavailable(
    provider: OpenAIProvider, openai_upstream: FakeOpenAIUpstream
) -> None:
    first, *_ = frames_of(Completion(text="partial"))
    error = b'event: error\ndata: {"message":"upstream gave up"}\n\n'
    openai_upstream.enqueue(Encoded(headers=SSE, frames=(first, error)))
    with pytest.raises(ProviderUnavailable):
        await answer(provider)


@pytest.mark.parametrize(
    "frame",
    [
        pytest.param(b"data: {not json\n\n", id="not-json"),
        pytest.param(b'data: ["a list"]\n\n', id="not-an-object"),
    ],
)
async def test_an_unreadable_chunk_raises_unavailable(
    provider: OpenAIProvider, openai_upstream: FakeOpenAIUpstream, frame: bytes
) -> None:
    first, *_ = frames_of(Completion(text="partial"))
    openai_upstream.enqueue(Encoded(headers=SSE, frames=(first, frame)))
    with pytest.raises(ProviderUnavailable):
        await answer(provider)


async def test_a_gzip_encoded_stream_is_decoded(
    provider: OpenAIProvider, openai_upstream: FakeOpenAIUpstream
) -> None:
    body = gzip.compress(b"".join(frames_of(Completion(text="squeezed words"))))
    headers = (*SSE, ("content-encoding", "gzip"))
    openai_upstream.enqueue(Encoded(headers=headers, frames=(body[:20], body[20:]), delay=0.001))
    assert text_of(await answer(provider)) == "squeezed words"


# --- closing ------------------------------------------------------------------------------


async def test_closing_the_stream_closes_the_upstream_connection_promptly(
    provider: OpenAIProvider, openai_upstream: FakeOpenAIUpstream
) -> None:
    openai_upstream.enqueue(Completion(text=" ".join(["word"] * 200), delay=0.05))
    stream = provider.stream(ask())
    async for event in stream:
        if isinstance(event, TextDelta):
            break
    closed_at = time.monotonic()
    await stream.aclose()
    log = await openai_upstream.stream_ended()
    assert log.outcome == "client_disconnected"
    assert openai_upstream.open_streams == 0
    assert log.closed_at is not None
    assert log.closed_at - closed_at < 1.0


async def test_injected_http_client_is_used(openai_upstream: FakeOpenAIUpstream) -> None:
    seen: list[str] = []

    async def on_request(request: httpx2.Request) -> None:
        seen.append(str(request.url))

    http = httpx2.AsyncClient(event_hooks={"request": [on_request]})
    provider = make_provider(openai_upstream, http_client=http)
    openai_upstream.enqueue(Completion(text="ok"))
    try:
        await answer(provider)
    finally:
        await provider.aclose()
    assert seen == [f"{openai_upstream.base_url}/chat/completions"]


def test_fixture_files_carry_no_credentials() -> None:
    for path in Path(FIXTURES).glob("openai-*/*"):
        text = path.read_text().lower()
        assert "authorization" not in text
        assert "bearer" not in text
        assert "sk-" not in text


def _parsed_chunks_held(frame: Any) -> int:
    """Parsed chunks (dicts with `choices`) reachable from a frame's locals."""
    found, seen = 0, set[int]()
    todo = [(value, 0) for value in frame.f_locals.values()]
    while todo:
        obj, depth = todo.pop()
        if id(obj) in seen or depth > 3:
            continue
        seen.add(id(obj))
        if isinstance(obj, dict):
            found += "choices" in obj
            todo += [(v, depth + 1) for v in obj.values()]
        elif isinstance(obj, list | tuple):
            todo += [(v, depth + 1) for v in obj]
    return found


async def test_a_stream_waiting_for_its_next_chunk_holds_no_parsed_chunk(
    provider: OpenAIProvider, openai_upstream: FakeOpenAIUpstream
) -> None:
    """An open stream spends most of its life waiting for the next chunk: what it holds
    then is memory per open stream. The chunk it last parsed is events by then."""
    openai_upstream.enqueue(Completion(text=["Hel", "lo"], delay=0.2))
    stream = provider.stream(ask())
    try:
        async for event in stream:
            if isinstance(event, TextDelta):
                break
        frame = cast(types.AsyncGeneratorType[ProviderEvent, None], stream).ag_frame
        assert frame is not None
        assert _parsed_chunks_held(frame) == 0
        assert [e.text async for e in stream if isinstance(e, TextDelta)] == ["lo"]
    finally:
        await stream.aclose()
