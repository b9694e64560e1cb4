"""Our history becomes Anthropic's `(system, messages)`.

Turns alternate and start with the user, and every tool use is answered in the next turn.
"""

from __future__ import annotations

from typing import Any

import pytest

from app.domain.errors import InvalidRequest
from app.domain.messages import Message
from app.translate.anthropic.write import CANCELLED_RESULT, OPENING_USER_TEXT, messages_to_anthropic
from tests.unit.translate.anthropic.wire import (
    assistant,
    block,
    convert,
    result,
    text,
    thinking,
    tool,
    use,
    user,
)

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


def test_message_history_round_trip_keeps_message_ids_out_of_the_wire() -> None:
    _, messages = messages_to_anthropic([Message(id="m1", role="user", content="Hi")])
    assert messages == [{"role": "user", "content": [block("Hi")]}]


def test_an_inline_image_becomes_a_base64_source() -> None:
    history = [
        Message.model_validate(
            {
                "role": "user",
                "content": [
                    {
                        "type": "file",
                        "data": {
                            "id": "file_1",
                            "name": "dot.png",
                            "mimeType": "image/png",
                            "url": "data:image/png;base64,iVBORw0KGgo=",
                        },
                    }
                ],
            }
        )
    ]

    _, messages = messages_to_anthropic(history)

    assert messages[0]["content"] == [
        {
            "type": "image",
            "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="},
        }
    ]
