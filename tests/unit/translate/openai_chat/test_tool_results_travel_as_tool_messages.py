"""A tool part's status and result travel in a `role: "tool"` message, and come back from one."""

from __future__ import annotations

import json
from typing import Any

import pytest

from app.domain.errors import InvalidRequest
from app.domain.messages import Message
from app.domain.parts import tool_part
from app.translate.openai_chat.read import messages_from_openai
from app.translate.openai_chat.tool_results import CANCELLED_TEXT
from app.translate.openai_chat.write import messages_to_openai
from tests.unit.translate.openai_chat.wire import assistant_calls, call, only_tool, tool_msg


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
