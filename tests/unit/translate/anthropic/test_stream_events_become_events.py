"""Each streamed Messages event becomes provider events; anything unknown is a clear error."""

from __future__ import annotations

from typing import Any

import pytest
from anthropic.types import RawContentBlockDeltaEvent, RawMessageStartEvent

from app.domain.errors import ProviderError, ProviderUnavailable
from app.domain.stream import (
    Finish,
    FinishReason,
    ProviderEvent,
    ResponseMeta,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    Usage,
)
from app.translate.anthropic.stream import stream_event_to_events
from tests.support.non_streaming import message_to_events

STREAM_EVENTS = [
    pytest.param(
        {
            "type": "message_start",
            "message": {"id": "msg_1", "model": "claude-x", "usage": {"input_tokens": 12}},
        },
        [ResponseMeta(response_id="msg_1", model="claude-x"), Usage(input_tokens=12)],
        id="message-start-gives-the-id-model-and-input-tokens",
    ),
    pytest.param(
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        [],
        id="an-empty-text-block-start-gives-nothing",
    ),
    pytest.param(
        {
            "type": "content_block_start",
            "index": 2,
            "content_block": {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {}},
        },
        [ToolCallDelta(index=2, id="toolu_1", name="weather")],
        id="a-tool-use-start-opens-a-call-without-taking-its-empty-input-as-arguments",
    ),
    pytest.param(
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "thinking", "thinking": "", "signature": ""},
        },
        [],
        id="an-empty-thinking-block-start-gives-nothing",
    ),
    pytest.param(
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "redacted_thinking", "data": "opaque"},
        },
        [],
        id="redacted-thinking-is-skipped",
    ),
    pytest.param(
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}},
        [TextDelta(text="Hi")],
        id="text-delta",
    ),
    pytest.param(
        {
            "type": "content_block_delta",
            "index": 3,
            "delta": {"type": "input_json_delta", "partial_json": ""},
        },
        [ToolCallDelta(index=3, args_delta="")],
        id="an-empty-input-json-delta-is-an-empty-piece",
    ),
    pytest.param(
        {
            "type": "content_block_delta",
            "index": 3,
            "delta": {"type": "input_json_delta", "partial_json": '{"ci'},
        },
        [ToolCallDelta(index=3, args_delta='{"ci')],
        id="input-json-delta-is-a-piece-of-the-arguments-keyed-by-block-index",
    ),
    pytest.param(
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "thinking_delta", "thinking": "Hmm"},
        },
        [ThinkingDelta(text="Hmm")],
        id="thinking-delta",
    ),
    pytest.param(
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "signature_delta", "signature": "sig"},
        },
        [ThinkingDelta(text="", signature="sig")],
        id="signature-delta-carries-the-signature",
    ),
    pytest.param(
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "citations_delta", "citation": {"type": "char_location"}},
        },
        [],
        id="citations-are-skipped",
    ),
    pytest.param(
        {
            "type": "message_delta",
            "delta": {"stop_reason": "tool_use"},
            "usage": {"output_tokens": 40},
        },
        [Usage(output_tokens=40), Finish(reason="tool_calls")],
        id="message-delta-gives-output-tokens-and-the-finish",
    ),
    pytest.param({"type": "ping"}, [], id="ping-is-ignored"),
    pytest.param({"type": "content_block_stop", "index": 0}, [], id="block-stop-is-ignored"),
    pytest.param({"type": "message_stop"}, [], id="message-stop-is-ignored"),
]


@pytest.mark.parametrize(("event", "expected"), STREAM_EVENTS)
def test_stream_event_translation(event: dict[str, Any], expected: list[ProviderEvent]) -> None:
    assert stream_event_to_events(event) == expected


@pytest.mark.parametrize(
    ("stop_reason", "finish"),
    [
        ("end_turn", "stop"),
        ("stop_sequence", "stop"),
        ("tool_use", "tool_calls"),
        ("max_tokens", "length"),
        ("refusal", "refusal"),
    ],
)
def test_stop_reasons_map_to_finish_reasons(stop_reason: str, finish: FinishReason) -> None:
    event = {"type": "message_delta", "delta": {"stop_reason": stop_reason}, "usage": {}}
    assert stream_event_to_events(event)[-1] == Finish(reason=finish)


def test_sdk_event_objects_translate_like_their_dicts() -> None:
    start = RawMessageStartEvent.model_validate(
        {
            "type": "message_start",
            "message": {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "model": "claude-x",
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": 7, "output_tokens": 1},
            },
        }
    )
    delta = RawContentBlockDeltaEvent.model_validate(
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": "{}"},
        }
    )
    assert stream_event_to_events(start) == [
        ResponseMeta(response_id="msg_1", model="claude-x"),
        Usage(input_tokens=7),
    ]
    assert stream_event_to_events(delta) == [ToolCallDelta(index=1, args_delta="{}")]


def test_an_error_event_raises_provider_unavailable_naming_its_type() -> None:
    event = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    with pytest.raises(ProviderUnavailable, match="overloaded_error"):
        stream_event_to_events(event)


@pytest.mark.parametrize(
    "event",
    [
        pytest.param({"type": "message_rewind"}, id="unknown-event"),
        pytest.param(
            {"type": "content_block_start", "index": 0, "content_block": {"type": "hologram"}},
            id="unknown-block",
        ),
        pytest.param(
            {"type": "content_block_delta", "index": 0, "delta": {"type": "hologram_delta"}},
            id="unknown-delta",
        ),
        pytest.param(
            {"type": "message_delta", "delta": {"stop_reason": "bored"}, "usage": {}},
            id="unknown-stop-reason",
        ),
    ],
)
def test_anything_unknown_is_a_clear_protocol_error(event: dict[str, Any]) -> None:
    with pytest.raises(ProviderError, match="does not understand") as caught:
        stream_event_to_events(event)
    assert caught.value.code == "provider_protocol_error"


def test_a_whole_message_gives_the_events_its_stream_would() -> None:
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-x",
        "content": [
            {"type": "thinking", "thinking": "Hmm.", "signature": "sig"},
            {"type": "text", "text": "Checking."},
            {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {"city": "Paris"}},
            {"type": "tool_use", "id": "toolu_2", "name": "now", "input": {}},
        ],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 10, "output_tokens": 20},
    }
    assert message_to_events(message) == [
        ResponseMeta(response_id="msg_1", model="claude-x"),
        Usage(input_tokens=10),
        ThinkingDelta(text="Hmm.", signature="sig"),
        TextDelta(text="Checking."),
        ToolCallDelta(index=2, id="toolu_1", name="weather"),
        ToolCallDelta(index=2, args_delta='{"city": "Paris"}'),
        ToolCallDelta(index=3, id="toolu_2", name="now"),
        Usage(input_tokens=10, output_tokens=20),
        Finish(reason="tool_calls"),
    ]


def test_cache_reads_count_as_cached_prompt_tokens() -> None:
    """Anthropic counts cache reads and writes apart from input_tokens; ours include them."""
    start = {
        "type": "message_start",
        "message": {
            "id": "msg_1",
            "model": "claude-haiku-4-5",
            "usage": {
                "input_tokens": 10,
                "cache_read_input_tokens": 300,
                "cache_creation_input_tokens": 50,
                "output_tokens": 1,
            },
        },
    }
    usage = [e for e in stream_event_to_events(start) if isinstance(e, Usage)]
    assert usage == [Usage(input_tokens=360, output_tokens=0, cached_tokens=300)]
