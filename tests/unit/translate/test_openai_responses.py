"""Responses input items -> our messages, tools and tool choice."""

from __future__ import annotations

from typing import Any

import pytest

from app.domain.errors import InvalidRequest
from app.domain.parts import FilePart, TextPart, ThinkingPart, ToolPart
from app.domain.stream import NamedToolChoice
from app.translate.openai_responses.read import messages_from_responses_input
from app.translate.openai_responses.tools import tool_choice_from_responses, tools_from_responses


def _call(call_id: str = "call_1", args: str = '{"city":"Paris"}') -> dict[str, Any]:
    return {"type": "function_call", "call_id": call_id, "name": "get_weather", "arguments": args}


def test_a_string_input_is_one_user_message() -> None:
    [message] = messages_from_responses_input("Hi", None)
    assert (message.role, message.content) == ("user", "Hi")


def test_instructions_come_first_as_a_system_message() -> None:
    messages = messages_from_responses_input("Hi", "Be brief.")
    assert [(m.role, m.text()) for m in messages] == [("system", "Be brief."), ("user", "Hi")]


def test_an_easy_message_without_type_is_read() -> None:
    [message] = messages_from_responses_input([{"role": "user", "content": "Hi"}], None)
    assert message.text() == "Hi"


def test_developer_messages_are_system_messages() -> None:
    items = [{"type": "message", "role": "developer", "content": "Rules."}]
    [message] = messages_from_responses_input(items, None)
    assert (message.role, message.text()) == ("system", "Rules.")


def test_user_content_parts_become_text_and_file_parts() -> None:
    items = [
        {
            "role": "user",
            "content": [
                {"type": "input_text", "text": "Look:"},
                {"type": "input_image", "image_url": "data:image/png;base64,AAAA"},
                {
                    "type": "input_file",
                    "filename": "a.pdf",
                    "file_data": "data:application/pdf;base64,AA",
                },
            ],
        }
    ]
    [message] = messages_from_responses_input(items, None)
    assert isinstance(message.content, list)
    text, image, file = message.content
    assert isinstance(text, TextPart) and text.data.text == "Look:"
    assert isinstance(image, FilePart) and image.data.mimeType == "image/png"
    assert isinstance(file, FilePart) and (file.data.name, file.data.mimeType) == (
        "a.pdf",
        "application/pdf",
    )


def test_assistant_text_and_calls_join_one_assistant_message() -> None:
    items = [
        {"role": "user", "content": "Weather?"},
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Checking."}],
        },
        _call("call_1"),
        _call("call_2", '{"city":"Oslo"}'),
    ]
    _, assistant = messages_from_responses_input(items, None)
    parts = assistant.parts()
    assert [p.type for p in parts] == ["text", "tool", "tool"]
    tools = assistant.tool_parts()
    assert [(t.id, t.data.args, t.data.status) for t in tools] == [
        ("call_1", {"city": "Paris"}, "waitingConfirmation"),
        ("call_2", {"city": "Oslo"}, "waitingConfirmation"),
    ]


def test_a_function_call_output_becomes_the_parts_result() -> None:
    items = [
        {"role": "user", "content": "Weather?"},
        _call(),
        {"type": "function_call_output", "call_id": "call_1", "output": '{"sky":"sun"}'},
    ]
    _, assistant = messages_from_responses_input(items, None)
    [part] = assistant.tool_parts()
    assert (part.data.status, part.data.result) == ("success", {"sky": "sun"})


def test_a_plain_text_output_stays_a_string() -> None:
    items = [_call(), {"type": "function_call_output", "call_id": "call_1", "output": "sunny"}]
    [assistant] = messages_from_responses_input(items, None)
    assert assistant.tool_parts()[0].data.result == "sunny"


def test_an_output_for_an_unknown_call_is_refused() -> None:
    items = [{"type": "function_call_output", "call_id": "call_9", "output": "x"}]
    with pytest.raises(InvalidRequest, match="call_9") as caught:
        messages_from_responses_input(items, None)
    assert caught.value.extra["param"] == "input[0]"


def test_a_second_output_for_one_call_is_refused() -> None:
    out = {"type": "function_call_output", "call_id": "call_1", "output": "x"}
    with pytest.raises(InvalidRequest, match="second output"):
        messages_from_responses_input([_call(), out, out], None)


def test_bad_json_arguments_make_an_error_part() -> None:
    [assistant] = messages_from_responses_input([_call(args="{nope")], None)
    [part] = assistant.tool_parts()
    assert part.data.status == "error"
    assert "not valid JSON" in (part.data.bodyContent or "")


def test_replayed_reasoning_and_mcp_calls_are_read_back() -> None:
    items = [
        {"role": "user", "content": "Find x"},
        {
            "type": "reasoning",
            "id": "rs_1",
            "summary": [],
            "content": [{"type": "reasoning_text", "text": "Think."}],
        },
        {
            "type": "mcp_call",
            "id": "call_f",
            "name": "find_nodes",
            "server_label": "chat-bff",
            "arguments": '{"query":"x"}',
            "status": "completed",
            "output": '{"nodes":[]}',
        },
        {
            "type": "mcp_call",
            "id": "call_g",
            "name": "find_nodes",
            "server_label": "chat-bff",
            "arguments": "{}",
            "status": "failed",
            "output": "boom",
        },
        {"type": "mcp_approval_request", "id": "appr_1", "name": "x", "arguments": "{}"},
        {"type": "mcp_submission_request", "id": "call_q", "name": "x", "arguments": "{}"},
    ]
    _, assistant = messages_from_responses_input(items, None)
    thinking, ok, failed, waiting = assistant.parts()
    assert isinstance(thinking, ThinkingPart) and thinking.data.content == "Think."
    assert isinstance(ok, ToolPart) and (ok.data.status, ok.data.result) == (
        "success",
        {"nodes": []},
    )
    assert isinstance(failed, ToolPart) and (failed.data.status, failed.data.bodyContent) == (
        "error",
        "boom",
    )
    # The approval request names no call: the API layer puts the stored call's id in.
    assert isinstance(waiting, ToolPart)
    assert (waiting.id, waiting.data.status, waiting.data.approvalId) == (
        "appr_1",
        "waitingConfirmation",
        "appr_1",
    )


@pytest.mark.parametrize(
    "item",
    [
        {"type": "item_reference", "id": "msg_1"},
        {"type": "web_search_call", "id": "ws_1"},
        {"role": "wizard", "content": "x"},
        "just a string",
        {"role": "user", "content": [{"type": "input_audio"}]},
    ],
)
def test_items_we_cannot_act_on_are_a_400(item: Any) -> None:
    with pytest.raises(InvalidRequest) as caught:
        messages_from_responses_input([item], None)
    assert caught.value.status == 400


def test_input_must_be_a_string_or_a_list() -> None:
    with pytest.raises(InvalidRequest):
        messages_from_responses_input({"role": "user"}, None)


def test_function_tools_in_responses_shape_become_specs() -> None:
    [spec] = tools_from_responses(
        [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}}]
    )
    assert (spec.name, spec.parameters) == ("get_weather", {"type": "object"})


@pytest.mark.parametrize(
    "tools",
    [
        [{"type": "web_search"}],
        [{"type": "function", "function": {"name": "chat_completions_shape"}}],
        [{"type": "function", "name": "bad name!"}],
        [{"type": "function", "name": "a"}, {"type": "function", "name": "a"}],
        "nope",
    ],
)
def test_bad_tools_are_refused(tools: Any) -> None:
    with pytest.raises(InvalidRequest):
        tools_from_responses(tools)


def test_tool_choice_shapes() -> None:
    assert tool_choice_from_responses(None) is None
    assert tool_choice_from_responses("required") == "required"
    assert tool_choice_from_responses({"type": "function", "name": "f"}) == NamedToolChoice(
        name="f"
    )
    with pytest.raises(InvalidRequest):
        tool_choice_from_responses({"type": "web_search"})
