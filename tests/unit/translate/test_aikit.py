"""`/api/chat` histories: AIKit messages, OpenAI messages, and both mixed."""

from __future__ import annotations

from typing import Any

import pytest

from app.domain.errors import InvalidRequest
from app.domain.parts import FilePart, TextPart, ThinkingPart, ToolPart
from app.domain.stream import Finish, ProviderEvent, TextDelta, ToolCallDelta
from app.translate.accumulator import PartsBuilder
from app.translate.aikit import messages_from_wire
from app.translate.openai_chat.read import tools_from_openai
from app.translate.openai_chat.write import messages_to_openai, parts_to_openai_message

CLIENT_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather for a city, rendered as a card in the browser.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "confirm_booking",
            "description": "Ask the user to confirm a booking.",
            "parameters": {"type": "object", "properties": {"hotel": {"type": "string"}}},
        },
    },
]


def test_aikit_reference_exchange_from_tool_call_to_final_text() -> None:
    opening = [
        {"role": "system", "content": "You are a travel assistant."},
        {"role": "user", "content": "What's the weather in Paris?"},
    ]
    assert [t.name for t in tools_from_openai(CLIENT_TOOLS)] == ["get_weather", "confirm_booking"]
    assert [m.role for m in messages_from_wire(opening)] == ["system", "user"]

    # The model calls a client tool; the browser receives it as a Chat Completions message.
    builder = PartsBuilder()
    events: list[ProviderEvent] = [
        ToolCallDelta(index=0, id="call_1", name="get_weather"),
        ToolCallDelta(index=0, args_delta='{"city": '),
        ToolCallDelta(index=0, args_delta='"Paris"}'),
        Finish(reason="tool_calls"),
    ]
    for event in events:
        builder.feed(event)
    (call,) = builder.build().parts
    assert isinstance(call, ToolPart)
    call.data.status = "waitingSubmission"  # a client tool waits for the browser
    message, finish = parts_to_openai_message([call])
    assert finish == "tool_calls"
    assert message["content"] is None

    # The browser runs the tool and continues with its result.
    continuation = [
        *opening,
        {k: v for k, v in message.items() if k != "refusal"},
        {"role": "tool", "tool_call_id": "call_1", "content": '{"temp_c": 18, "sky": "clear"}'},
    ]
    history = messages_from_wire(continuation)
    assert [m.role for m in history] == ["system", "user", "assistant"]
    (part,) = history[2].tool_parts()
    assert part.data.status == "success"
    assert part.data.args == {"city": "Paris"}
    assert part.data.result == {"temp_c": 18, "sky": "clear"}

    # The next model call sees a history equal (as JSON) to what the browser sent.
    upstream = messages_to_openai(history)
    assert upstream[2]["tool_calls"][0]["function"]["arguments"] == '{"city":"Paris"}'
    assert upstream[3] == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": '{"sky":"clear","temp_c":18}',
    }

    # The model answers in text; the exchange ends.
    final = PartsBuilder()
    for event in [TextDelta(text="It's 18°C and clear "), TextDelta(text="in Paris.")]:
        final.feed(event)
    message, finish = parts_to_openai_message(final.build().parts)
    assert (message["content"], finish) == ("It's 18°C and clear in Paris.", "stop")


def test_aikit_typed_message_keeps_its_parts_id_and_metadata() -> None:
    (message,) = messages_from_wire(
        [
            {
                "id": "m1",
                "role": "assistant",
                "metadata": {"model": "gpt-4o-mini"},
                "content": [
                    {"type": "thinking", "data": {"content": "hmm", "status": "thought"}},
                    {"type": "text", "data": {"text": "Here."}},
                    {
                        "type": "tool",
                        "id": "c1",
                        "data": {
                            "toolName": "t",
                            "toolCallId": "c1",
                            "args": {"a": 1},
                            "status": "success",
                            "result": "ok",
                        },
                    },
                ],
            }
        ]
    )
    assert (message.id, message.metadata) == ("m1", {"model": "gpt-4o-mini"})
    thinking, text, tool = message.parts()
    assert isinstance(thinking, ThinkingPart)
    assert isinstance(text, TextPart)
    assert isinstance(tool, ToolPart)
    assert tool.data.result == "ok"


def test_aikit_tool_part_without_an_id_takes_its_tool_call_id() -> None:
    (message,) = messages_from_wire(
        [
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool",
                        "data": {"toolName": "t", "toolCallId": "c9", "status": "loading"},
                    }
                ],
            }
        ]
    )
    assert message.tool_parts()[0].id == "c9"


def test_user_attachment_part_is_read() -> None:
    (message,) = messages_from_wire(
        [
            {
                "role": "user",
                "content": [
                    {"type": "text", "data": {"text": "See attached"}},
                    {
                        "type": "file",
                        "data": {"id": "f1", "name": "a.pdf", "mimeType": "application/pdf"},
                    },
                ],
            }
        ]
    )
    assert isinstance(message.parts()[1], FilePart)


def test_string_content_keeps_the_client_message_id() -> None:
    (message,) = messages_from_wire([{"id": "u1", "role": "user", "content": "Hello"}])
    assert (message.id, message.content) == ("u1", "Hello")


def test_openai_tool_result_folds_into_an_aikit_tool_part() -> None:
    history = messages_from_wire(
        [
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool",
                        "data": {
                            "toolName": "pick",
                            "toolCallId": "c1",
                            "args": {},
                            "status": "waitingSubmission",
                        },
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "blue"},
        ]
    )
    (part,) = history[0].tool_parts()
    assert (part.data.status, part.data.result) == ("success", "blue")


def test_openai_messages_are_recognised_per_message() -> None:
    history = messages_from_wire(
        [
            {"role": "developer", "content": "Be brief."},
            {"role": "user", "content": [{"type": "text", "text": "Hi"}]},
            {"role": "assistant", "content": [{"type": "text", "data": {"text": "Hello!"}}]},
        ]
    )
    assert [m.role for m in history] == ["system", "user", "assistant"]
    assert history[1].text() == "Hi"
    assert history[2].text() == "Hello!"


@pytest.mark.parametrize(
    ("item", "match"),
    [
        pytest.param(
            {
                "role": "user",
                "content": [{"type": "text", "text": "a"}, {"type": "text", "data": {"text": "b"}}],
            },
            "mixes",
            id="mixed-part-formats",
        ),
        pytest.param(
            {
                "role": "assistant",
                "content": [
                    {"type": "tool", "data": {"toolName": "t", "toolCallId": "c", "status": "done"}}
                ],
            },
            "not a valid AIKit message",
            id="unknown-tool-status",
        ),
        pytest.param(
            {"role": "user", "content": [{"type": "video", "data": {}}]},
            "not a valid AIKit message",
            id="unknown-part-type",
        ),
        pytest.param(
            {"role": "user", "content": [{"type": "text", "data": {}}]},
            "text",
            id="text-without-text",
        ),
        pytest.param(["not", "an", "object"], "must be an object", id="not-an-object"),
        pytest.param({"role": "robot", "content": "x"}, "unknown role", id="unknown-role"),
    ],
)
def test_malformed_message_is_refused_naming_its_index(item: Any, match: str) -> None:
    with pytest.raises(InvalidRequest, match=match) as caught:
        messages_from_wire([{"role": "user", "content": "ok"}, item])
    assert "messages[1]" in caught.value.message


def test_messages_that_are_not_a_list_are_refused() -> None:
    with pytest.raises(InvalidRequest, match="array"):
        messages_from_wire({"role": "user"})  # type: ignore[arg-type]
