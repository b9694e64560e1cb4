"""Anthropic Messages translation: our history out, Anthropic's events in."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from anthropic.types import RawContentBlockDeltaEvent, RawMessageStartEvent
from hypothesis import given
from hypothesis import strategies as st

from app.domain.errors import InvalidRequest, ProviderError, ProviderUnavailable
from app.domain.messages import MESSAGES_ADAPTER, Message
from app.domain.stream import (
    Finish,
    FinishReason,
    NamedToolChoice,
    ProviderEvent,
    ResponseMeta,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    ToolChoice,
    ToolSpec,
    Usage,
)
from app.translate.anthropic.stream import stream_event_to_events
from app.translate.anthropic.write import (
    CANCELLED_RESULT,
    OPENING_USER_TEXT,
    messages_to_anthropic,
    tool_choice_to_anthropic,
    tools_to_anthropic,
)
from tests.support.non_streaming import message_to_events


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def assistant(*parts: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": list(parts)}


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "data": {"text": value}}


def thinking(content: str, signature: str | None = None) -> dict[str, Any]:
    return {"type": "thinking", "data": {"content": content, "signature": signature}}


def tool(
    call_id: str, status: str, result: Any = None, args: dict[str, Any] | None = None
) -> dict[str, Any]:
    return {
        "type": "tool",
        "id": call_id,
        "data": {
            "toolName": "weather",
            "toolCallId": call_id,
            "args": {"city": "Paris"} if args is None else args,
            "status": status,
            "result": result,
        },
    }


def block(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def use(call_id: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "type": "tool_use",
        "id": call_id,
        "name": "weather",
        "input": {"city": "Paris"} if args is None else args,
    }


def result(call_id: str, content: str, *, error: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "tool_result", "tool_use_id": call_id, "content": content}
    if error:
        out["is_error"] = True
    return out


def convert(history: list[dict[str, Any]]) -> tuple[str | None, list[dict[str, Any]]]:
    return messages_to_anthropic(MESSAGES_ADAPTER.validate_python(history))


HISTORIES = [
    pytest.param(
        [{"role": "system", "content": "Be brief."}, user("Hi")],
        "Be brief.",
        [{"role": "user", "content": [block("Hi")]}],
        id="system-message-is-lifted-into-the-system-prompt",
    ),
    pytest.param(
        [{"role": "system", "content": "A."}, user("Hi"), {"role": "system", "content": "B."}],
        "A.\n\nB.",
        [{"role": "user", "content": [block("Hi")]}],
        id="several-system-messages-are-joined",
    ),
    pytest.param(
        [user("one"), user("two")],
        None,
        [{"role": "user", "content": [block("one"), block("two")]}],
        id="consecutive-user-messages-merge-into-one-turn",
    ),
    pytest.param(
        [user("Hi"), assistant(text("Hello")), assistant(text("again"))],
        None,
        [
            {"role": "user", "content": [block("Hi")]},
            {"role": "assistant", "content": [block("Hello"), block("again")]},
        ],
        id="consecutive-assistant-messages-merge-into-one-turn",
    ),
    pytest.param(
        [assistant(text("How can I help?")), user("Weather?")],
        None,
        [
            {"role": "user", "content": [block(OPENING_USER_TEXT)]},
            {"role": "assistant", "content": [block("How can I help?")]},
            {"role": "user", "content": [block("Weather?")]},
        ],
        id="a-history-opening-with-the-assistant-gets-a-user-turn-first",
    ),
    pytest.param(
        [user("Paris?"), assistant(tool("t1", "success", {"temp": 18})), user("And Oslo?")],
        None,
        [
            {"role": "user", "content": [block("Paris?")]},
            {"role": "assistant", "content": [use("t1")]},
            {"role": "user", "content": [result("t1", '{"temp": 18}'), block("And Oslo?")]},
        ],
        id="tool-results-come-first-in-the-next-user-turn",
    ),
    pytest.param(
        [user("Paris?"), assistant(tool("t1", "success", "18 degrees"), text("It is 18."))],
        None,
        [
            {"role": "user", "content": [block("Paris?")]},
            {"role": "assistant", "content": [use("t1")]},
            {"role": "user", "content": [result("t1", "18 degrees")]},
            {"role": "assistant", "content": [block("It is 18.")]},
        ],
        id="text-after-tools-opens-a-new-assistant-turn-after-the-results",
    ),
    pytest.param(
        [user("Paris?"), assistant(tool("t1", "error", "station offline"))],
        None,
        [
            {"role": "user", "content": [block("Paris?")]},
            {"role": "assistant", "content": [use("t1")]},
            {"role": "user", "content": [result("t1", "station offline", error=True)]},
        ],
        id="a-failed-tool-sends-an-error-result",
    ),
    pytest.param(
        [user("Paris?"), assistant(tool("t1", "cancelled"))],
        None,
        [
            {"role": "user", "content": [block("Paris?")]},
            {"role": "assistant", "content": [use("t1")]},
            {"role": "user", "content": [result("t1", CANCELLED_RESULT, error=True)]},
        ],
        id="a-cancelled-tool-sends-an-error-result-saying-the-user-cancelled",
    ),
    pytest.param(
        [user("Paris?"), assistant(thinking("Hmm.", "sig-1"), text("Sure."))],
        None,
        [
            {"role": "user", "content": [block("Paris?")]},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "Hmm.", "signature": "sig-1"},
                    block("Sure."),
                ],
            },
        ],
        id="signed-thinking-travels-back-with-its-signature",
    ),
    pytest.param(
        [user("Paris?"), assistant(thinking("Hmm."), text("Sure."))],
        None,
        [
            {"role": "user", "content": [block("Paris?")]},
            {"role": "assistant", "content": [block("Sure.")]},
        ],
        id="unsigned-thinking-stays-behind",
    ),
    pytest.param(
        [user("Hi"), assistant(text(""), text("  \n"), text("Hello")), user(""), user("More")],
        None,
        [
            {"role": "user", "content": [block("Hi")]},
            {"role": "assistant", "content": [block("Hello")]},
            {"role": "user", "content": [block("More")]},
        ],
        id="empty-and-blank-text-is-never-sent",
    ),
    pytest.param(
        [user("Hi"), assistant(text("")), user("Still there?")],
        None,
        [{"role": "user", "content": [block("Hi"), block("Still there?")]}],
        id="an-assistant-message-with-nothing-to-send-leaves-the-users-merged",
    ),
    pytest.param(
        [user("Go"), assistant(tool("t1", "success", None, args={}))],
        None,
        [
            {"role": "user", "content": [block("Go")]},
            {"role": "assistant", "content": [use("t1", {})]},
            {"role": "user", "content": [result("t1", "(the tool returned nothing)")]},
        ],
        id="an-empty-result-is-still-a-non-empty-tool-result",
    ),
]


@pytest.mark.parametrize(("history", "system", "messages"), HISTORIES)
def test_history_translation(
    history: list[dict[str, Any]], system: str | None, messages: list[dict[str, Any]]
) -> None:
    assert convert(history) == (system, messages)


@pytest.mark.parametrize("status", ["loading", "waitingConfirmation", "waitingSubmission"])
def test_a_tool_without_a_final_result_gets_a_no_result_yet_error(status: str) -> None:
    _, messages = convert([user("Go"), assistant(tool("t1", status))])
    (tool_result,) = messages[-1]["content"]
    assert tool_result["tool_use_id"] == "t1"
    assert tool_result["is_error"] is True
    assert "No result yet" in tool_result["content"]


def test_a_tool_part_in_a_user_message_is_refused() -> None:
    with pytest.raises(InvalidRequest):
        convert([{"role": "user", "content": [tool("t1", "success", "x")]}])


def test_an_aikit_history_of_a_full_tool_round_trip_converts_to_valid_turns() -> None:
    history: list[dict[str, Any]] = [
        {"id": "m1", "role": "user", "content": "Weather in Paris and Oslo?"},
        {
            "id": "m2",
            "role": "assistant",
            "content": [
                thinking("Two cities, two calls.", "sig-1"),
                text("Let me check both."),
                tool("toolu_1", "success", {"temp": 18}),
                tool("toolu_2", "error", "station offline", args={"city": "Oslo"}),
                text("Paris is 18°C; Oslo's station is offline."),
            ],
            "metadata": {"model": "claude-haiku-4-5"},
        },
        {"id": "m3", "role": "user", "content": [text("Thanks!")]},
    ]
    assert convert(history) == (
        None,
        [
            {"role": "user", "content": [block("Weather in Paris and Oslo?")]},
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "thinking",
                        "thinking": "Two cities, two calls.",
                        "signature": "sig-1",
                    },
                    block("Let me check both."),
                    use("toolu_1"),
                    use("toolu_2", {"city": "Oslo"}),
                ],
            },
            {
                "role": "user",
                "content": [
                    result("toolu_1", '{"temp": 18}'),
                    result("toolu_2", "station offline", error=True),
                ],
            },
            {"role": "assistant", "content": [block("Paris is 18°C; Oslo's station is offline.")]},
            {"role": "user", "content": [block("Thanks!")]},
        ],
    )


def test_every_tool_use_is_answered_by_one_result_in_the_next_turn() -> None:
    parts = [tool(f"t{i}", s) for i, s in enumerate(["success", "error", "cancelled", "loading"])]
    _, messages = convert([user("Go"), assistant(*parts, text("Done."))])
    uses = [b["id"] for b in messages[1]["content"] if b["type"] == "tool_use"]
    answered = [b["tool_use_id"] for b in messages[2]["content"]]
    assert uses == answered == ["t0", "t1", "t2", "t3"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant"]


def test_tool_specs_become_tools_with_an_input_schema() -> None:
    schema = {"type": "object", "properties": {"city": {"type": "string"}}}
    tools = [
        ToolSpec(name="weather", description="Weather now", parameters=schema),
        ToolSpec(name="now"),
    ]
    assert tools_to_anthropic(tools) == [
        {"name": "weather", "description": "Weather now", "input_schema": schema},
        {"name": "now", "input_schema": {"type": "object", "properties": {}}},
    ]


@pytest.mark.parametrize(
    ("choice", "parallel", "expected"),
    [
        pytest.param(None, None, None, id="none-given-means-the-default"),
        pytest.param("auto", None, {"type": "auto"}, id="auto"),
        pytest.param("required", None, {"type": "any"}, id="required-is-any"),
        pytest.param("none", None, {"type": "none"}, id="none"),
        pytest.param(
            NamedToolChoice(name="weather"), None, {"type": "tool", "name": "weather"}, id="named"
        ),
        pytest.param(
            None,
            False,
            {"type": "auto", "disable_parallel_tool_use": True},
            id="no-parallel-calls-without-a-choice",
        ),
        pytest.param(
            "required",
            False,
            {"type": "any", "disable_parallel_tool_use": True},
            id="no-parallel-calls-with-required",
        ),
    ],
)
def test_tool_choice_translation(
    choice: ToolChoice | None, parallel: bool | None, expected: dict[str, Any] | None
) -> None:
    assert tool_choice_to_anthropic(choice, parallel_tool_calls=parallel) == expected


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


def test_message_history_round_trip_keeps_message_ids_out_of_the_wire() -> None:
    _, messages = messages_to_anthropic([Message(id="m1", role="user", content="Hi")])
    assert messages == [{"role": "user", "content": [block("Hi")]}]


_STATUSES = ["loading", "waitingConfirmation", "waitingSubmission", "success", "error", "cancelled"]
_texts = st.sampled_from(["", " ", "Hi", "More text"])
_parts = st.one_of(
    _texts.map(text),
    st.tuples(_texts, st.sampled_from([None, "sig"])).map(lambda t: thinking(*t)),
    st.tuples(st.sampled_from(_STATUSES), st.sampled_from([None, "ok", {"n": 1}])).map(
        lambda t: tool("?", *t)
    ),
)
_messages = st.one_of(
    _texts.map(user),
    _texts.map(lambda t: {"role": "system", "content": t}),
    st.lists(_parts, max_size=5).map(lambda parts: assistant(*parts)),
)


def _with_unique_ids(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    counter = 0
    for message in history:
        for part in message["content"] if isinstance(message["content"], list) else []:
            if part["type"] == "tool":
                counter += 1
                part["id"] = part["data"]["toolCallId"] = f"t{counter}"
    return history


@given(st.lists(_messages, max_size=8).map(_with_unique_ids))
def test_any_history_becomes_a_valid_anthropic_conversation(history: list[dict[str, Any]]) -> None:
    _, messages = convert(history)
    roles = [m["role"] for m in messages]
    assert roles[:1] in ([], ["user"])
    assert all(a != b for a, b in itertools.pairwise(roles))
    for turn in messages:
        assert turn["content"]
        for item in turn["content"]:
            assert item["type"] != "text" or item["text"].strip()
    for position, turn in enumerate(messages):
        uses = [b["id"] for b in turn["content"] if b["type"] == "tool_use"]
        if not uses:
            continue
        following = messages[position + 1]
        results = [b["tool_use_id"] for b in following["content"][: len(uses)]]
        assert results == uses
