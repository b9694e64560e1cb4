"""The Anthropic provider, driven through the official SDK against the fake upstream."""

from __future__ import annotations

import asyncio
import email.utils
import json
import socket
import time
from collections.abc import AsyncIterator
from typing import Any

import anthropic
import httpx2
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
from app.domain.parts import (
    Part,
    TextPart,
    ThinkingData,
    ThinkingPart,
    ToolPart,
    text_part,
    tool_part,
)
from app.domain.stream import ModelRequest, ProviderEvent, ToolSpec
from app.providers import _sse
from app.providers.anthropic import AnthropicProvider
from app.providers.base import Provider
from app.translate.accumulator import ModelResponse, PartsBuilder
from tests.fakes.anthropic_upstream import (
    FIXTURES,
    AnthropicUpstream,
    MessageSpec,
    Reply,
    Text,
    ToolUse,
    spec_frames,
)
from tests.support.non_streaming import fold, message_to_events

KEY = "sk-ant-canary-0123456789"
FAST_RETRY = {"retry-after-ms": "10"}  # the SDK honours it; keeps retry tests quick


def make_provider(upstream: AnthropicUpstream, **overrides: Any) -> AnthropicProvider:
    options: dict[str, Any] = {
        "api_key": KEY,
        "base_url": upstream.base_url,
        "timeout": 5.0,
        "connect_timeout": 2.0,
        "max_retries": 2,
    }
    options.update(overrides)
    return AnthropicProvider(**options)


@pytest.fixture
async def provider(anthropic_upstream: AnthropicUpstream) -> AsyncIterator[AnthropicProvider]:
    provider = make_provider(anthropic_upstream)
    yield provider
    await provider.aclose()


def request(**fields: Any) -> ModelRequest:
    fields.setdefault("messages", [Message(role="user", content="Hello")])
    return ModelRequest(model="claude-haiku-4-5", **fields)


def summary(parts: list[Part]) -> list[tuple[Any, ...]]:
    """Parts as short tuples, so a table can say what a stream should fold into."""
    out: list[tuple[Any, ...]] = []
    for part in parts:
        if isinstance(part, TextPart):
            out.append(("text", part.data.text))
        elif isinstance(part, ThinkingPart):
            out.append(("thinking", part.data.content, part.data.signature is not None))
        elif isinstance(part, ToolPart):
            out.append(("tool", part.data.toolName, part.data.args, part.data.status))
        else:
            out.append((part.type,))
    return out


async def non_streamed(upstream: AnthropicUpstream) -> ModelResponse:
    """The same call without streaming: the SDK's Message, through `message_to_events`."""
    client = anthropic.AsyncAnthropic(api_key=KEY, base_url=upstream.base_url, max_retries=0)
    try:
        message = await client.messages.create(
            model="claude-haiku-4-5",
            max_tokens=100,
            messages=[{"role": "user", "content": "Hello"}],
        )
    finally:
        await client.close()
    builder = PartsBuilder()
    for event in message_to_events(message):
        builder.feed(event)
    return builder.build()


RECORDED = {
    "text": (
        [
            (
                "text",
                "Hello! I'm doing well, thank you for asking. How are you doing today?"
                " Is there anything I can help you with?",
            )
        ],
        "stop",
        (12, 30),
    ),
    "tool-use": (
        [
            (
                "tool",
                "json",
                {
                    "elements": [
                        {"location": "San Francisco", "temperature": 58, "condition": "sunny"}
                    ]
                },
                "loading",
            )
        ],
        "tool_calls",
        (849, 47),
    ),
    "tool-use-no-args": (
        [
            ("text", "I'll update the issue list for you."),
            ("tool", "updateIssueList", {}, "loading"),
        ],
        "tool_calls",
        (565, 48),
    ),
    "thinking": (
        [
            (
                "thinking",
                "The previous result was 925. Now I need to divide that by 5.\n\n925 ÷ 5 = 185",
                True,
            ),
            ("text", "925 ÷ 5 = 185"),
        ],
        "stop",
        (69, 53),
    ),
    "refusal": ([], "refusal", (18, 5)),
}


def test_the_provider_satisfies_the_protocol(provider: AnthropicProvider) -> None:
    assert isinstance(provider, Provider)


@pytest.mark.parametrize("name", sorted(RECORDED))
async def test_recorded_stream_folds_into_the_expected_parts(
    name: str, anthropic_upstream: AnthropicUpstream, provider: AnthropicProvider
) -> None:
    parts, finish, usage = RECORDED[name]
    anthropic_upstream.replay(name)
    response = await fold(provider.stream(request()))
    assert summary(response.parts) == parts
    assert response.finish_reason == finish
    assert (response.input_tokens, response.output_tokens) == usage


async def test_recorded_stream_keeps_the_response_id_and_model(
    anthropic_upstream: AnthropicUpstream, provider: AnthropicProvider
) -> None:
    anthropic_upstream.replay("text")
    response = await fold(provider.stream(request()))
    assert response.response_id == "msg_01QC4g3HwBThD4BaNtBckFDJ"
    assert response.model == "claude-sonnet-4-5-20250929"


async def test_thinking_signature_survives_the_stream(
    anthropic_upstream: AnthropicUpstream, provider: AnthropicProvider
) -> None:
    anthropic_upstream.replay("thinking")
    response = await fold(provider.stream(request()))
    thinking = response.parts[0]
    assert isinstance(thinking, ThinkingPart)
    assert thinking.data.signature is not None
    assert thinking.data.signature.startswith(
        "EvQBCkYICxgCKkAxhD4NUKFzudtZ6NzbZdEiBACIScTzqjPViM596"
    )


@pytest.mark.parametrize("name", sorted(RECORDED))
async def test_stream_and_non_stream_give_identical_parts(
    name: str, anthropic_upstream: AnthropicUpstream, provider: AnthropicProvider
) -> None:
    anthropic_upstream.replay(name)
    anthropic_upstream.replay(name)
    streamed = await fold(provider.stream(request()))
    whole = await non_streamed(anthropic_upstream)
    assert [p.model_dump() for p in streamed.parts] == [p.model_dump() for p in whole.parts]
    assert streamed.finish_reason == whole.finish_reason
    assert (streamed.input_tokens, streamed.output_tokens) == (
        whole.input_tokens,
        whole.output_tokens,
    )


async def test_parallel_tool_use_gives_identical_parts_streamed_or_not(
    anthropic_upstream: AnthropicUpstream, provider: AnthropicProvider
) -> None:
    spec = MessageSpec(
        [
            Text("Checking both."),
            ToolUse("weather", {"city": "Paris"}, id="toolu_a"),
            ToolUse("time", {"tz": "Europe/Paris"}, id="toolu_b"),
        ]
    )
    anthropic_upstream.message(spec)
    anthropic_upstream.message(spec)
    streamed = await fold(provider.stream(request()))
    whole = await non_streamed(anthropic_upstream)
    assert [p.model_dump() for p in streamed.parts] == [p.model_dump() for p in whole.parts]


async def test_parallel_tool_use_blocks_become_separate_tool_parts(
    anthropic_upstream: AnthropicUpstream, provider: AnthropicProvider
) -> None:
    anthropic_upstream.message(
        MessageSpec(
            [
                ToolUse("weather", {"city": "Paris"}, id="toolu_a"),
                ToolUse("weather", {"city": "Oslo"}, id="toolu_b"),
            ]
        )
    )
    response = await fold(provider.stream(request()))
    tools = response.tool_parts()
    assert [(t.id, t.data.args) for t in tools] == [
        ("toolu_a", {"city": "Paris"}),
        ("toolu_b", {"city": "Oslo"}),
    ]
    assert response.finish_reason == "tool_calls"


async def test_arguments_streamed_one_character_at_a_time_parse_whole(
    anthropic_upstream: AnthropicUpstream, provider: AnthropicProvider
) -> None:
    args = {"query": "naïve café", "limit": 3, "filters": {"tags": ["a", "b"]}}
    anthropic_upstream.message(MessageSpec([ToolUse("search", args, piece_size=1)]))
    response = await fold(provider.stream(request()))
    (tool,) = response.tool_parts()
    assert tool.data.args == args


async def test_malformed_tool_json_becomes_an_error_part(
    anthropic_upstream: AnthropicUpstream, provider: AnthropicProvider
) -> None:
    anthropic_upstream.message(MessageSpec([ToolUse("search", '{"query": "unterminated')]))
    response = await fold(provider.stream(request()))
    (tool,) = response.tool_parts()
    assert tool.data.status == "error"
    assert tool.data.bodyContent is not None
    assert "not valid JSON" in tool.data.bodyContent


async def test_usage_comes_from_message_start_and_message_delta(
    anthropic_upstream: AnthropicUpstream, provider: AnthropicProvider
) -> None:
    anthropic_upstream.message(MessageSpec([Text("Hi")], input_tokens=321, output_tokens=54))
    response = await fold(provider.stream(request()))
    assert (response.input_tokens, response.output_tokens) == (321, 54)


async def test_request_carries_system_tools_choice_and_default_max_tokens(
    anthropic_upstream: AnthropicUpstream, provider: AnthropicProvider
) -> None:
    anthropic_upstream.message(MessageSpec([Text("ok")]))
    tool = ToolSpec(name="weather", description="Weather now", parameters={"type": "object"})
    await fold(
        provider.stream(
            request(
                messages=[
                    Message(role="system", content="Be brief."),
                    Message(role="user", content="Weather?"),
                ],
                tools=[tool],
                tool_choice="required",
            )
        )
    )
    body = anthropic_upstream.requests[0].json
    assert body["system"] == "Be brief."
    assert body["max_tokens"] == 4096
    assert body["stream"] is True
    assert body["messages"] == [{"role": "user", "content": [{"type": "text", "text": "Weather?"}]}]
    assert body["tools"] == [
        {"name": "weather", "description": "Weather now", "input_schema": {"type": "object"}}
    ]
    assert body["tool_choice"] == {"type": "any"}
    assert "temperature" not in body


async def test_request_without_tools_sends_no_tool_fields(
    anthropic_upstream: AnthropicUpstream, provider: AnthropicProvider
) -> None:
    anthropic_upstream.message(MessageSpec([Text("ok")]))
    await fold(provider.stream(request(tool_choice="auto", temperature=0.2, max_output_tokens=50)))
    body = anthropic_upstream.requests[0].json
    assert "tools" not in body
    assert "tool_choice" not in body
    assert "system" not in body
    assert (body["temperature"], body["max_tokens"]) == (0.2, 50)


async def test_the_key_travels_in_the_auth_header_and_never_in_the_body(
    anthropic_upstream: AnthropicUpstream, provider: AnthropicProvider
) -> None:
    anthropic_upstream.message(MessageSpec([Text("ok")]))
    await fold(provider.stream(request()))
    recorded = anthropic_upstream.requests[0]
    # SDK 2.x sends `Authorization: Bearer`; older ones sent `x-api-key`.
    sent = recorded.headers.get("x-api-key") or recorded.headers["authorization"]
    assert sent.removeprefix("Bearer ") == KEY
    assert KEY.encode() not in recorded.body


async def test_rate_limit_is_retried_after_retry_after_then_succeeds(
    anthropic_upstream: AnthropicUpstream, provider: AnthropicProvider
) -> None:
    anthropic_upstream.error(429, headers={"retry-after": "0.05"})
    anthropic_upstream.message(MessageSpec([Text("Finally")]))
    response = await fold(provider.stream(request()))
    assert summary(response.parts) == [("text", "Finally")]
    assert len(anthropic_upstream.requests) == 2


async def test_exhausted_rate_limit_raises_with_the_upstream_retry_after(
    anthropic_upstream: AnthropicUpstream,
) -> None:
    provider = make_provider(anthropic_upstream, max_retries=1)
    anthropic_upstream.error(429, headers={"retry-after": "0.05"})
    anthropic_upstream.error(429, headers={"retry-after": "0.05"})
    with pytest.raises(ProviderRateLimited) as caught:
        await fold(provider.stream(request()))
    await provider.aclose()
    assert caught.value.retry_after == pytest.approx(0.05)
    assert caught.value.status == 429
    assert len(anthropic_upstream.requests) == 2


@pytest.mark.parametrize("status", [500, 529])
async def test_server_errors_are_retried_then_raise_unavailable(
    status: int, anthropic_upstream: AnthropicUpstream, provider: AnthropicProvider
) -> None:
    for _ in range(3):
        anthropic_upstream.error(status, headers=FAST_RETRY)
    with pytest.raises(ProviderUnavailable) as caught:
        await fold(provider.stream(request()))
    assert caught.value.status == 502
    assert caught.value.upstream_status == status
    assert len(anthropic_upstream.requests) == 3


async def test_overload_then_success_is_retried_transparently(
    anthropic_upstream: AnthropicUpstream, provider: AnthropicProvider
) -> None:
    anthropic_upstream.error(529, headers=FAST_RETRY)
    anthropic_upstream.message(MessageSpec([Text("Back")]))
    response = await fold(provider.stream(request()))
    assert summary(response.parts) == [("text", "Back")]


@pytest.mark.parametrize("status", [408, 504])
async def test_an_upstream_timeout_status_raises_timeout(
    status: int, anthropic_upstream: AnthropicUpstream
) -> None:
    provider = make_provider(anthropic_upstream, max_retries=0)
    anthropic_upstream.error(status, "took too long", error_type="timeout_error")
    with pytest.raises(ProviderTimeout) as caught:
        await fold(provider.stream(request()))
    await provider.aclose()
    assert (caught.value.status, caught.value.upstream_status) == (504, status)


async def test_a_stream_event_past_the_size_limit_is_unreadable_not_held(
    anthropic_upstream: AnthropicUpstream,
    provider: AnthropicProvider,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_sse, "MAX_EVENT_BYTES", 4096, raising=False)
    anthropic_upstream.message(MessageSpec([Text("x" * 300_000)]))  # many reads long
    with pytest.raises(ProviderUnavailable) as caught:
        await fold(provider.stream(request()))
    assert "could not read" in caught.value.message
    assert len(anthropic_upstream.requests) == 1


@pytest.mark.parametrize("wait", [{"retry-after": "3600"}, {"retry-after-ms": "600000"}])
async def test_a_rate_limit_asking_for_a_long_wait_is_not_waited_out(
    anthropic_upstream: AnthropicUpstream, provider: AnthropicProvider, wait: dict[str, str]
) -> None:
    """The caller hears of it at once, with the wait, instead of after hours of retries."""
    anthropic_upstream.error(429, headers=wait)
    anthropic_upstream.message(MessageSpec([Text("Never asked for")]))
    with pytest.raises(ProviderRateLimited) as caught:
        await asyncio.wait_for(fold(provider.stream(request())), timeout=10)
    assert caught.value.retry_after is not None and caught.value.retry_after >= 600
    assert len(anthropic_upstream.requests) == 1
    anthropic_upstream.reset()


async def test_a_rate_limit_until_an_http_date_gives_the_seconds_until_then(
    anthropic_upstream: AnthropicUpstream,
) -> None:
    provider = make_provider(anthropic_upstream, max_retries=0)
    until = email.utils.formatdate(time.time() + 30, usegmt=True)
    anthropic_upstream.error(429, headers={"retry-after": until})
    with pytest.raises(ProviderRateLimited) as caught:
        await fold(provider.stream(request()))
    await provider.aclose()
    assert caught.value.retry_after is not None
    assert 25 < caught.value.retry_after <= 30


@pytest.mark.parametrize("status", [401, 403])
async def test_refused_credentials_raise_an_auth_error_that_never_shows_the_key(
    status: int, anthropic_upstream: AnthropicUpstream, provider: AnthropicProvider
) -> None:
    anthropic_upstream.error(status, f"invalid x-api-key: {KEY}")
    with pytest.raises(ProviderAuthError) as caught:
        await fold(provider.stream(request()))
    error = caught.value
    assert error.status == 502
    assert error.upstream_status == status
    assert KEY not in str(error)
    assert KEY not in repr(error)
    assert KEY not in str(error.to_body())
    assert len(anthropic_upstream.requests) == 1


async def test_bad_request_passes_the_upstream_reason_with_secrets_redacted(
    anthropic_upstream: AnthropicUpstream, provider: AnthropicProvider
) -> None:
    anthropic_upstream.error(
        400, f"messages.0.content: text content blocks must be non-empty ({KEY}, Bearer abc.def)"
    )
    with pytest.raises(ProviderBadRequest) as caught:
        await fold(provider.stream(request()))
    error = caught.value
    assert error.status == 400
    assert "text content blocks must be non-empty" in error.message
    for secret in (KEY, "sk-ant-", "abc.def"):
        assert secret not in str(error)
        assert secret not in repr(error)


async def test_stream_cut_mid_way_raises_unavailable_after_the_events_so_far(
    anthropic_upstream: AnthropicUpstream, provider: AnthropicProvider
) -> None:
    anthropic_upstream.message(MessageSpec([Text("one two three four five")]), cut_after=5)
    seen: list[ProviderEvent] = []

    async def consume() -> None:
        async for event in provider.stream(request()):
            seen.append(event)

    with pytest.raises(ProviderUnavailable):
        await consume()
    assert any(event.type == "text_delta" for event in seen)
    assert len(anthropic_upstream.requests) == 1  # never retried after the first event


async def test_stream_that_ends_without_message_stop_raises_unavailable(
    anthropic_upstream: AnthropicUpstream, provider: AnthropicProvider
) -> None:
    frames = spec_frames(MessageSpec([Text("one two")]))[:-2]
    anthropic_upstream.respond(lambda _request: Reply(frames=frames))
    with pytest.raises(ProviderUnavailable, match="before it was complete"):
        await fold(provider.stream(request()))


async def test_error_event_in_the_stream_raises_unavailable(
    anthropic_upstream: AnthropicUpstream, provider: AnthropicProvider
) -> None:
    anthropic_upstream.stream_error(MessageSpec([Text("one two three")]), after=4)
    with pytest.raises(ProviderUnavailable, match="overloaded_error"):
        await fold(provider.stream(request()))
    assert len(anthropic_upstream.requests) == 1


# ---- the raw stream reader -----------------------------------------------------------


@pytest.mark.parametrize("name", sorted(RECORDED))
async def test_a_recorded_stream_sent_with_crlf_in_odd_pieces_folds_the_same(
    name: str, anthropic_upstream: AnthropicUpstream, provider: AnthropicProvider
) -> None:
    body = (FIXTURES / f"{name}.sse").read_bytes().replace(b"\n", b"\r\n")
    pieces = [body[i : i + 97] for i in range(0, len(body), 97)]  # cuts frames and CRLFs
    anthropic_upstream.respond(lambda _request: Reply(frames=pieces, delay=0.001))
    parts, finish, usage = RECORDED[name]
    response = await fold(provider.stream(request()))
    assert summary(response.parts) == parts
    assert (response.finish_reason, (response.input_tokens, response.output_tokens)) == (
        finish,
        usage,
    )


async def test_comments_pings_empty_data_and_unnamed_events_are_skipped(
    anthropic_upstream: AnthropicUpstream, provider: AnthropicProvider
) -> None:
    noise = [b": keep-alive\n\n", b"event: ping\ndata:\n\n", b'data: {"type":"odd"}\n\n']
    frames = [f for frame in spec_frames(MessageSpec([Text("one two")])) for f in (frame, *noise)]
    anthropic_upstream.respond(lambda _request: Reply(frames=frames))
    response = await fold(provider.stream(request()))
    assert summary(response.parts) == [("text", "one two")]


async def test_an_error_event_gives_our_message_and_none_of_the_upstream_text(
    anthropic_upstream: AnthropicUpstream, provider: AnthropicProvider
) -> None:
    error = {"type": "error", "error": {"type": "api_error", "message": f"boom {KEY}"}}
    frames = [
        *spec_frames(MessageSpec([Text("one two three")]))[:4],
        f"event: error\ndata: {json.dumps(error)}\n\n".encode(),
    ]
    anthropic_upstream.respond(lambda _request: Reply(frames=frames))
    with pytest.raises(ProviderUnavailable) as caught:
        await fold(provider.stream(request()))
    assert caught.value.message == "Anthropic stopped the response mid-stream (api_error)."
    assert isinstance(caught.value.__cause__, anthropic.APIStatusError)
    assert KEY not in str(caught.value.to_body())
    assert "boom" not in str(caught.value.to_body())


@pytest.mark.parametrize(
    "frame",
    [
        pytest.param(b"event: content_block_delta\ndata: {nope\n\n", id="not-json"),
        pytest.param(b"event: content_block_delta\ndata: [1]\n\n", id="not-an-object"),
    ],
)
async def test_an_unreadable_event_raises_unavailable(
    anthropic_upstream: AnthropicUpstream, provider: AnthropicProvider, frame: bytes
) -> None:
    frames = [*spec_frames(MessageSpec([Text("one two")]))[:3], frame]
    anthropic_upstream.respond(lambda _request: Reply(frames=frames))
    with pytest.raises(ProviderUnavailable, match="could not read"):
        await fold(provider.stream(request()))


async def test_no_answer_in_time_raises_timeout(anthropic_upstream: AnthropicUpstream) -> None:
    provider = make_provider(anthropic_upstream, timeout=0.3, max_retries=0)
    anthropic_upstream.message(MessageSpec([Text("late")]), stall=1.0)
    with pytest.raises(ProviderTimeout) as caught:
        await fold(provider.stream(request()))
    await provider.aclose()
    assert caught.value.status == 504


async def test_a_stalled_stream_raises_timeout(anthropic_upstream: AnthropicUpstream) -> None:
    provider = make_provider(anthropic_upstream, timeout=0.3, max_retries=0)
    anthropic_upstream.message(MessageSpec([Text("slow words")]), hold_after=3)
    with pytest.raises(ProviderTimeout):
        await fold(provider.stream(request()))
    await provider.aclose()


async def test_closing_the_generator_closes_the_upstream_call_promptly(
    anthropic_upstream: AnthropicUpstream, provider: AnthropicProvider
) -> None:
    anthropic_upstream.message(MessageSpec([Text("one two three four")]), hold_after=4)
    events = provider.stream(request())
    first = await anext(events)
    assert first.type == "response_meta"
    await events.aclose()
    assert await asyncio.to_thread(anthropic_upstream.wait_for_disconnect, 1.0)
    assert anthropic_upstream.open_streams == 0


async def test_errors_are_provider_errors_raised_from_the_sdk_error(
    anthropic_upstream: AnthropicUpstream, provider: AnthropicProvider
) -> None:
    anthropic_upstream.error(404, "model: claude-nope")
    with pytest.raises(ProviderError) as caught:
        await fold(provider.stream(request()))
    assert isinstance(caught.value.__cause__, anthropic.NotFoundError)
    assert caught.value.provider == "anthropic"


async def test_a_refused_connection_raises_unavailable() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    provider = AnthropicProvider(
        api_key=KEY,
        base_url=f"http://127.0.0.1:{port}",
        timeout=2.0,
        connect_timeout=1.0,
        max_retries=0,
    )
    with pytest.raises(ProviderUnavailable):
        await fold(provider.stream(request()))
    await provider.aclose()


async def test_an_injected_http_client_carries_the_calls() -> None:
    body = (FIXTURES / "text.sse").read_bytes()
    seen: list[httpx2.Request] = []

    def answer(sent: httpx2.Request) -> httpx2.Response:
        seen.append(sent)
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    http_client = httpx2.AsyncClient(transport=httpx2.MockTransport(answer))
    provider = AnthropicProvider(
        api_key=KEY,
        base_url="http://anthropic.test",
        timeout=2.0,
        connect_timeout=1.0,
        max_retries=0,
        http_client=http_client,
    )
    response = await fold(provider.stream(request()))
    assert response.finish_reason == "stop"
    assert [str(r.url) for r in seen] == ["http://anthropic.test/v1/messages"]
    await provider.aclose()
    assert http_client.is_closed


async def test_a_history_with_a_full_tool_round_trip_is_accepted_upstream(
    anthropic_upstream: AnthropicUpstream, provider: AnthropicProvider
) -> None:
    history = [
        Message(role="system", content="Be brief."),
        Message(role="user", content="Weather in Paris and Oslo?"),
        Message(
            role="assistant",
            content=[
                ThinkingPart(data=ThinkingData(content="Two calls.", signature="sig-1")),
                text_part("Checking."),
                tool_part(
                    tool_call_id="toolu_1",
                    tool_name="weather",
                    status="success",
                    args={"city": "Paris"},
                    result={"temp": 18},
                ),
                tool_part(tool_call_id="toolu_2", tool_name="weather", status="cancelled"),
                text_part("Paris is 18°C; Oslo was cancelled."),
                tool_part(tool_call_id="toolu_3", tool_name="weather", status="loading"),
            ],
        ),
        Message(role="user", content="Thanks"),
    ]
    anthropic_upstream.message(MessageSpec([Text("You're welcome.")]))
    response = await fold(provider.stream(request(messages=history)))
    assert summary(response.parts) == [("text", "You're welcome.")]
    sent = anthropic_upstream.requests[0].json["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "user", "assistant", "user"]


async def test_the_fake_refuses_a_dangling_tool_use_like_the_real_api(
    anthropic_upstream: AnthropicUpstream,
) -> None:
    client = anthropic.AsyncAnthropic(
        api_key=KEY, base_url=anthropic_upstream.base_url, max_retries=0
    )
    with pytest.raises(anthropic.BadRequestError, match="without `tool_result`"):
        await client.messages.create(
            model="claude-haiku-4-5",
            max_tokens=10,
            messages=[
                {"role": "user", "content": "Go"},
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": "toolu_1", "name": "x", "input": {}}],
                },
                {"role": "user", "content": "And?"},
            ],
        )
    await client.close()


async def test_many_concurrent_streams_all_reach_the_upstream_at_once(
    anthropic_upstream: AnthropicUpstream,
) -> None:
    # A plain httpx client pools 100 connections: stream 101 would queue behind the others
    # (and time out on a busy service). The SDK's own client allows 1,000, like OpenAI's.
    streams = 150
    for _ in range(streams):
        # Stalled long past the wait below: a queued stream could only start after one of
        # the first 100 had ended, so it never counts as in flight while they are held.
        anthropic_upstream.message(MessageSpec(blocks=[Text("ok")]), stall=60.0)

    provider = make_provider(anthropic_upstream, timeout=90.0, max_retries=0)

    async def one() -> list[ProviderEvent]:
        return [event async for event in provider.stream(request())]

    calls = asyncio.gather(*(one() for _ in range(streams)))
    deadline = time.monotonic() + 45.0  # generous for a loaded host; none is answered yet
    while len(anthropic_upstream.requests) < streams and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    in_flight = len(anthropic_upstream.requests)
    anthropic_upstream.release_stalls()
    answers = await calls
    await provider.aclose()

    assert in_flight == streams
    assert len(answers) == streams
