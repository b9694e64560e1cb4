"""Our messages become a Chat Completions history an OpenAI model accepts."""

from __future__ import annotations

from app.domain.messages import Message
from app.domain.parts import FileData, FilePart, Part, ThinkingData, ThinkingPart, text_part
from app.translate.openai_chat.write import messages_to_openai
from tests.unit.translate.openai_chat.wire import success


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
