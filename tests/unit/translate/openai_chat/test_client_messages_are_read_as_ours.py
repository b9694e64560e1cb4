"""A Chat Completions client's `messages` become ours; a malformed one is refused by index."""

from __future__ import annotations

from typing import Any

import pytest

from app.domain.errors import InvalidRequest
from app.domain.parts import FilePart, TextPart, ToolPart
from app.translate.data_url import data_url_mime
from app.translate.openai_chat.read import messages_from_openai
from tests.unit.translate.openai_chat.wire import assistant_calls, call, only_tool, tool_msg


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
