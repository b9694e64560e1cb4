"""OpenAI Chat Completions <-> messages, parts and provider events."""

from __future__ import annotations

import json
from typing import Any

import pytest
from openai.types.chat import ChatCompletionChunk

from app.domain.errors import InvalidRequest
from app.domain.messages import Message
from app.domain.parts import (
    FileData,
    FilePart,
    Part,
    TextPart,
    ThinkingData,
    ThinkingPart,
    ToolPart,
    text_part,
    tool_part,
)
from app.domain.stream import (
    Finish,
    NamedToolChoice,
    ResponseMeta,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    ToolSpec,
    Usage,
)
from app.translate.data_url import data_url_mime
from app.translate.openai_chat.read import (
    messages_from_openai,
    tool_choice_from_openai,
    tools_from_openai,
)
from app.translate.openai_chat.stream import chunk_to_events
from app.translate.openai_chat.tool_results import CANCELLED_TEXT
from app.translate.openai_chat.write import (
    messages_to_openai,
    parts_to_openai_message,
    tool_choice_to_openai,
    tools_to_openai,
)
from tests.fakes.openai_upstream import FIXTURES
from tests.support.non_streaming import completion_to_events


def call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def assistant_calls(*calls: dict[str, Any], content: str | None = None) -> dict[str, Any]:
    return {"role": "assistant", "content": content, "tool_calls": list(calls)}


def tool_msg(call_id: str, content: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": content}


def only_tool(messages: list[Message]) -> ToolPart:
    (part,) = [p for m in messages for p in m.tool_parts()]
    return part


def without_ids(messages: list[Message]) -> list[dict[str, Any]]:
    return [m.model_dump(exclude={"id"}) for m in messages]


# --- OpenAI -> messages -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("item", "role", "content"),
    [
        pytest.param(
            {"role": "system", "content": "Be brief."}, "system", "Be brief.", id="system"
        ),
        pytest.param(
            {"role": "developer", "content": "Be brief."}, "system", "Be brief.", id="developer"
        ),
        pytest.param(
            {
                "role": "system",
                "content": [{"type": "text", "text": "A"}, {"type": "text", "text": "B"}],
            },
            "system",
            "AB",
            id="system-text-parts",
        ),
        pytest.param({"role": "user", "content": "Hi"}, "user", "Hi", id="user-string"),
    ],
)
def test_plain_messages_keep_role_and_text(item: dict[str, Any], role: str, content: str) -> None:
    (message,) = messages_from_openai([item])
    assert message.role == role
    assert message.content == content


def test_user_content_parts_become_text_and_file_parts() -> None:
    (message,) = messages_from_openai(
        [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "What is this?"},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
                ],
            }
        ]
    )
    text, image = message.parts()
    assert isinstance(text, TextPart)
    assert text.data.text == "What is this?"
    assert isinstance(image, FilePart)
    assert (image.data.mimeType, image.data.url) == ("image/png", "data:image/png;base64,AAAA")


@pytest.mark.parametrize(
    ("url", "mime"),
    [
        ("data:image/png;base64,AAAA", "image/png"),
        ("data:text/plain,hello", "text/plain"),
        ("data:,hello", None),
        ("https://example.com/a.png", None),
        (None, None),
    ],
)
def test_data_url_mime_reads_the_media_type_of_a_data_url(url: Any, mime: str | None) -> None:
    assert data_url_mime(url) == mime


def test_a_file_part_whose_data_url_has_no_parameters_is_read_not_refused() -> None:
    (message,) = messages_from_openai(
        [
            {
                "role": "user",
                "content": [
                    {
                        "type": "file",
                        "file": {"filename": "a.txt", "file_data": "data:text/plain,hello"},
                    }
                ],
            }
        ]
    )
    (file,) = message.parts()
    assert isinstance(file, FilePart)
    assert file.data.mimeType == "text/plain"


def test_assistant_text_and_tool_calls_become_a_text_part_then_tool_parts() -> None:
    (message,) = messages_from_openai(
        [
            assistant_calls(
                call("c1", "weather", '{"city": "Paris"}'),
                call("c2", "time", "{}"),
                content="Checking.",
            )
        ]
    )
    text, first, second = message.parts()
    assert isinstance(text, TextPart)
    assert text.data.text == "Checking."
    assert isinstance(first, ToolPart)
    assert (first.id, first.data.args, first.data.status) == (
        "c1",
        {"city": "Paris"},
        "waitingConfirmation",
    )
    assert isinstance(second, ToolPart)
    assert second.data.args == {}


@pytest.mark.parametrize(
    ("content", "status", "result"),
    [
        pytest.param('{"temp": 21}', "success", {"temp": 21}, id="json-object"),
        pytest.param("London", "success", "London", id="plain-text"),
        pytest.param(
            '{"error": "city unknown"}',
            "success",
            {"error": "city unknown"},
            id="error-key-is-data",
        ),
        pytest.param('{"status":"error","error":"boom"}', "error", "boom", id="error-envelope"),
        pytest.param(
            json.dumps({"status": "cancelled", "message": CANCELLED_TEXT}),
            "cancelled",
            None,
            id="cancelled-envelope",
        ),
        pytest.param(
            '{"status":"pending","message":"later"}', "waitingConfirmation", None, id="pending"
        ),
    ],
)
def test_tool_message_folds_into_the_matching_tool_part(
    content: str, status: str, result: Any
) -> None:
    messages = messages_from_openai(
        [assistant_calls(call("c1", "weather", '{"city":"Paris"}')), tool_msg("c1", content)]
    )
    assert len(messages) == 1
    part = only_tool(messages)
    assert (part.data.status, part.data.result) == (status, result)


def test_tool_message_for_an_unknown_call_is_refused_naming_its_index() -> None:
    with pytest.raises(InvalidRequest, match=r"messages\[1\].*'nope'"):
        messages_from_openai([{"role": "user", "content": "Hi"}, tool_msg("nope", "x")])


def test_second_result_for_the_same_call_is_refused() -> None:
    with pytest.raises(InvalidRequest, match=r"messages\[2\].*second result"):
        messages_from_openai(
            [assistant_calls(call("c1", "t", "{}")), tool_msg("c1", "a"), tool_msg("c1", "b")]
        )


def test_invalid_json_arguments_give_an_error_part_with_a_readable_body() -> None:
    part = only_tool(messages_from_openai([assistant_calls(call("c1", "search", '{"q": "x'))]))
    assert part.data.status == "error"
    assert part.data.args is None
    assert part.data.bodyContent is not None
    assert "not valid JSON" in part.data.bodyContent


def test_consecutive_assistant_messages_stay_separate() -> None:
    messages = messages_from_openai(
        [
            assistant_calls(call("c1", "t", "{}"), content="First."),
            tool_msg("c1", "ok"),
            {"role": "assistant", "content": "Second."},
        ]
    )
    assert [m.role for m in messages] == ["assistant", "assistant"]
    assert messages[1].text() == "Second."


@pytest.mark.parametrize(
    "item",
    [
        pytest.param({"role": "wizard", "content": "x"}, id="unknown-role"),
        pytest.param({"role": "user", "content": 42}, id="content-not-text"),
        pytest.param({"role": "user", "content": [{"type": "input_audio"}]}, id="unsupported-part"),
        pytest.param(
            {"role": "assistant", "tool_calls": [{"id": "c1"}]}, id="call-without-function"
        ),
        pytest.param({"role": "tool", "content": "x"}, id="tool-without-call-id"),
        pytest.param("just a string", id="not-an-object"),
    ],
)
def test_malformed_messages_are_refused_with_their_index(item: Any) -> None:
    with pytest.raises(InvalidRequest, match=r"messages\[1\]"):
        messages_from_openai([{"role": "user", "content": "Hi"}, item])


# --- messages -> OpenAI -------------------------------------------------------------------


def success(call_id: str, name: str, args: dict[str, Any], result: Any) -> ToolPart:
    return tool_part(
        tool_call_id=call_id, tool_name=name, status="success", args=args, result=result
    )


def test_text_after_tool_calls_starts_a_new_assistant_message() -> None:
    parts: list[Part] = [
        text_part("Let me check."),
        success("c1", "weather", {"city": "Paris"}, {"temp": 21}),
        success("c2", "time", {}, "12:00"),
        text_part("It is 21 degrees at noon."),
    ]
    wire = messages_to_openai([Message(role="assistant", content=parts)])
    assert [(m["role"], m.get("content")) for m in wire] == [
        ("assistant", "Let me check."),
        ("tool", '{"temp":21}'),
        ("tool", "12:00"),
        ("assistant", "It is 21 degrees at noon."),
    ]
    assert [c["id"] for c in wire[0]["tool_calls"]] == ["c1", "c2"]
    assert "tool_calls" not in wire[3]


def test_assistant_with_only_tool_calls_has_null_content() -> None:
    wire = messages_to_openai([Message(role="assistant", content=[success("c1", "t", {}, "ok")])])
    assert wire[0]["content"] is None


def test_thinking_is_not_sent_to_openai() -> None:
    parts: list[Part] = [ThinkingPart(data=ThinkingData(content="hmm")), text_part("Answer.")]
    assert messages_to_openai([Message(role="assistant", content=parts)]) == [
        {"role": "assistant", "content": "Answer."}
    ]


def test_empty_assistant_message_is_left_out() -> None:
    assert messages_to_openai([Message(role="assistant", content="")]) == []


def test_tool_arguments_are_emitted_as_canonical_json() -> None:
    part = success("c1", "t", {"b": 1, "a": {"y": 2, "x": "é"}}, "ok")
    (message, _) = messages_to_openai([Message(role="assistant", content=[part])])
    assert message["tool_calls"][0]["function"]["arguments"] == '{"a":{"x":"é","y":2},"b":1}'


@pytest.mark.parametrize(
    ("status", "result", "body", "expected"),
    [
        pytest.param(
            "error", "City unknown", None, {"status": "error", "error": "City unknown"}, id="error"
        ),
        pytest.param(
            "error", None, "Bad args", {"status": "error", "error": "Bad args"}, id="error-body"
        ),
        pytest.param(
            "cancelled",
            None,
            None,
            {"status": "cancelled", "message": CANCELLED_TEXT},
            id="cancelled",
        ),
        pytest.param("waitingConfirmation", None, None, "pending", id="awaiting-human"),
        pytest.param("waitingSubmission", None, None, "pending", id="awaiting-client"),
        pytest.param("loading", None, None, "pending", id="running"),
    ],
)
def test_every_tool_call_gets_a_tool_message_the_model_can_read(
    status: Any, result: Any, body: str | None, expected: Any
) -> None:
    part = tool_part(
        tool_call_id="c1", tool_name="t", status=status, args={}, result=result, body_content=body
    )
    (_, tool) = messages_to_openai([Message(role="assistant", content=[part])])
    content = json.loads(tool["content"])
    if expected == "pending":
        assert content["status"] == "pending"
        assert "No result yet" in content["message"]
    else:
        assert content == expected


def test_user_attachments_become_openai_content_parts() -> None:
    parts: list[Part] = [
        text_part("Look"),
        FilePart(
            data=FileData(id="f1", name="cat.png", mimeType="image/png", url="https://x/cat.png")
        ),
        FilePart(data=FileData(id="f2", name="notes.pdf", mimeType="application/pdf")),
    ]
    (message,) = messages_to_openai([Message(role="user", content=parts)])
    assert message["content"] == [
        {"type": "text", "text": "Look"},
        {"type": "image_url", "image_url": {"url": "https://x/cat.png"}},
        {"type": "text", "text": "[Attached file: notes.pdf]"},
    ]


def test_openai_history_round_trips_through_our_messages() -> None:
    recorded = json.loads(
        (FIXTURES / "openai-chat/gpt-4o-mini-tool-call-then-answer.2.request.json").read_text()
    )
    history = recorded["messages"] + [
        {"role": "assistant", "content": "The capital of the UK is London."},
        {
            "role": "user",
            "content": [{"type": "text", "text": "And"}, {"type": "text", "text": " France?"}],
        },
    ]
    assert messages_to_openai(messages_from_openai(history)) == history


def test_our_messages_round_trip_through_openai() -> None:
    messages = [
        Message(role="system", content="Be brief."),
        Message(role="user", content="Weather and news?"),
        Message(
            role="assistant",
            content=[
                text_part("Checking."),
                success("c1", "weather", {"city": "Paris"}, {"temp": 21}),
                tool_part(
                    tool_call_id="c2", tool_name="news", status="error", args={}, result="down"
                ),
                tool_part(
                    tool_call_id="c3", tool_name="send", status="cancelled", args={"to": "x"}
                ),
                tool_part(
                    tool_call_id="c4", tool_name="delete", status="waitingConfirmation", args={}
                ),
            ],
        ),
    ]
    assert without_ids(messages_from_openai(messages_to_openai(messages))) == without_ids(messages)


# --- tools --------------------------------------------------------------------------------


def test_client_tools_are_read_from_openai_function_tools() -> None:
    (spec,) = tools_from_openai(
        [
            {
                "type": "function",
                "function": {
                    "name": "get_capital",
                    "description": "Capital of a country.",
                    "parameters": {"type": "object", "properties": {"country": {"type": "string"}}},
                    "strict": True,
                },
            }
        ]
    )
    assert spec.name == "get_capital"
    assert spec.parameters["properties"] == {"country": {"type": "string"}}


@pytest.mark.parametrize(
    "tools",
    [
        pytest.param({"type": "function"}, id="not-a-list"),
        pytest.param([{"type": "retrieval"}], id="not-a-function"),
        pytest.param([{"type": "function"}], id="no-function"),
        pytest.param([{"type": "function", "function": {"name": "has space"}}], id="bad-name"),
        pytest.param(
            [{"type": "function", "function": {"name": "t", "parameters": "x"}}], id="bad-schema"
        ),
        pytest.param([{"type": "function", "function": {"name": "t"}}] * 2, id="duplicate-names"),
    ],
)
def test_malformed_client_tools_are_refused(tools: Any) -> None:
    with pytest.raises(InvalidRequest):
        tools_from_openai(tools)


def test_tool_specs_become_openai_function_tools() -> None:
    spec = ToolSpec(name="t", description="d", parameters={"type": "object", "properties": {}})
    assert tools_to_openai([spec]) == [
        {
            "type": "function",
            "function": {"name": "t", "description": "d", "parameters": spec.parameters},
        }
    ]


@pytest.mark.parametrize(
    ("choice", "wire"),
    [
        pytest.param(None, None, id="unset"),
        pytest.param("auto", "auto", id="auto"),
        pytest.param("required", "required", id="required"),
        pytest.param(
            NamedToolChoice(name="t"), {"type": "function", "function": {"name": "t"}}, id="named"
        ),
    ],
)
def test_tool_choice_maps_both_ways(choice: Any, wire: Any) -> None:
    assert tool_choice_to_openai(choice) == wire
    assert tool_choice_from_openai(wire) == choice


# --- stream chunks -> events --------------------------------------------------------------


def chunk(
    delta: dict[str, Any] | None = None, finish: str | None = None, **extra: Any
) -> dict[str, Any]:
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    return {
        "id": "chatcmpl-1",
        "model": "gpt-x",
        "object": "chat.completion.chunk",
        "choices": choices,
        **extra,
    }


@pytest.mark.parametrize(
    ("data", "events"),
    [
        pytest.param(chunk({"content": "Hi"}), [TextDelta(text="Hi")], id="content"),
        pytest.param(chunk({"role": "assistant", "content": ""}), [], id="empty-role-chunk"),
        pytest.param(
            chunk({"reasoning_content": "hmm"}), [ThinkingDelta(text="hmm")], id="reasoning-content"
        ),
        pytest.param(chunk({"reasoning": "hmm"}), [ThinkingDelta(text="hmm")], id="reasoning"),
        pytest.param(chunk({"refusal": "I can't."}), [TextDelta(text="I can't.")], id="refusal"),
        pytest.param(
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": 1,
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "t", "arguments": ""},
                        }
                    ]
                }
            ),
            [ToolCallDelta(index=1, id="c1", name="t")],
            id="tool-call-start-at-index-1",
        ),
        pytest.param(
            chunk(
                {
                    "tool_calls": [
                        {"index": 0, "function": {"arguments": '{"a"'}},
                        {"index": 1, "function": {"arguments": "{}"}},
                    ]
                }
            ),
            [ToolCallDelta(index=0, args_delta='{"a"'), ToolCallDelta(index=1, args_delta="{}")],
            id="parallel-pieces",
        ),
        pytest.param(
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": None,
                            "id": "c1",
                            "function": {"name": "t", "arguments": {"a": 1}},
                        }
                    ]
                }
            ),
            [ToolCallDelta(index=0, id="c1", name="t", args_delta='{"a": 1}')],
            id="compatible-server-null-index-object-arguments",
        ),
        pytest.param(chunk({}, "stop"), [Finish(reason="stop")], id="finish-stop"),
        pytest.param(
            chunk({}, "tool_calls"), [Finish(reason="tool_calls")], id="finish-tool-calls"
        ),
        pytest.param(
            chunk({}, "function_call"), [Finish(reason="tool_calls")], id="finish-function-call"
        ),
        pytest.param(chunk({}, "length"), [Finish(reason="length")], id="finish-length"),
        pytest.param(
            chunk({}, "content_filter"), [Finish(reason="content_filter")], id="finish-filter"
        ),
        pytest.param(
            chunk(None, usage={"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}),
            [Usage(input_tokens=5, output_tokens=3)],
            id="usage-chunk",
        ),
    ],
)
def test_chunk_becomes_provider_events(data: dict[str, Any], events: list[Any]) -> None:
    assert chunk_to_events(data) == events


def test_first_chunk_carries_the_response_id_and_model() -> None:
    events = chunk_to_events(chunk({"content": "Hi"}), first=True)
    assert events[0] == ResponseMeta(response_id="chatcmpl-1", model="gpt-x")


def test_sdk_chunk_objects_are_accepted() -> None:
    sdk_chunk = ChatCompletionChunk.model_validate(
        chunk({"content": "Hi", "reasoning_content": "hmm"}, created=1)
    )
    assert chunk_to_events(sdk_chunk) == [ThinkingDelta(text="hmm"), TextDelta(text="Hi")]


def test_non_streaming_completion_becomes_the_same_events_a_stream_gives() -> None:
    body = {
        "id": "chatcmpl-2",
        "model": "gpt-x",
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {
                    "role": "assistant",
                    "content": "Looking.",
                    "tool_calls": [call("c1", "t", '{"a":1}')],
                },
            }
        ],
        "usage": {"prompt_tokens": 9, "completion_tokens": 4},
    }
    assert completion_to_events(body) == [
        ResponseMeta(response_id="chatcmpl-2", model="gpt-x"),
        TextDelta(text="Looking."),
        ToolCallDelta(index=0, id="c1", name="t", args_delta='{"a":1}'),
        Usage(input_tokens=9, output_tokens=4),
        Finish(reason="tool_calls"),
    ]


# --- our answer -> choices[0].message ------------------------------------------------------


def test_answer_with_a_client_tool_call_asks_the_client_to_call_it() -> None:
    waiting = tool_part(
        tool_call_id="c1", tool_name="pick_color", status="waitingSubmission", args={"n": 1}
    )
    message, finish = parts_to_openai_message([text_part("Pick one."), waiting])
    assert finish == "tool_calls"
    assert message["content"] == "Pick one."
    assert message["tool_calls"] == [call("c1", "pick_color", '{"n":1}')]


def test_answer_hides_server_tools_that_already_ran() -> None:
    parts: list[Part] = [
        text_part("Checking."),
        success("c1", "weather", {}, {"temp": 21}),
        text_part("It is 21 degrees."),
    ]
    message, finish = parts_to_openai_message(parts)
    assert finish == "stop"
    assert "tool_calls" not in message
    assert message["content"] == "Checking.\n\nIt is 21 degrees."


def test_answer_with_only_a_tool_call_has_null_content() -> None:
    waiting = tool_part(tool_call_id="c1", tool_name="t", status="waitingConfirmation", args={})
    message, _ = parts_to_openai_message([waiting])
    assert message["content"] is None
