"""Our answer as `choices[0].message`: the client sees only the tool calls it must run."""

from __future__ import annotations

from app.domain.parts import Part, text_part, tool_part
from app.translate.openai_chat.write import parts_to_openai_message
from tests.unit.translate.openai_chat.wire import call, success


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
