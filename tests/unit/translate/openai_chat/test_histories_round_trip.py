"""Reading and writing are inverses: a history survives the trip through the other shape."""

from __future__ import annotations

import json

from app.domain.messages import Message
from app.domain.parts import text_part, tool_part
from app.translate.openai_chat.read import messages_from_openai
from app.translate.openai_chat.write import messages_to_openai
from tests.fakes.openai_upstream import FIXTURES
from tests.unit.translate.openai_chat.wire import success, without_ids


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
