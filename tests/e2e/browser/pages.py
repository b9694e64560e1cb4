"""What the page tests and their conftest share: the long scripted answers, reading the
cards a page showed, and what a stopped answer must be."""

from __future__ import annotations

from typing import Any

# 600 words at 30 ms a word (18 s): reloaded 20 words in, the page must find the answer
# still running however loaded the machine (a built page's reload takes seconds there).
STORY = " ".join(f"word{i}" for i in range(600)) + "."
# Long enough that Stop, pressed a few words in, always lands before the end, however
# loaded the machine: if Stop does nothing, the page waits in vain and the test fails.
SAGA = " ".join(f"saga{i}" for i in range(3000)) + "."


def statuses(cards: list[dict[str, Any]], name: str) -> list[str]:
    """The statuses of the cards of tool `name`, in page order."""
    return [c["status"] for c in cards if c["name"] == name]


def assert_cut_where_stop_landed(text: str) -> None:
    """Some of the saga, a prefix of it, not all of it: the answer as far as it got."""
    assert len(text.split()) > 20
    assert SAGA.startswith(text)
    assert len(text) < len(SAGA)


def assert_usable_after_stop(seen: dict[str, Any], text: str, mark: str) -> None:
    """The next question was answered; the stopped answer, marked `mark`, did not grow
    meanwhile, and a reload shows both the same."""
    stopped, hello = (
        {k: a[k] for k in ("text", "mark")} for a in seen["after_stop"]["answers"][-2:]
    )
    assert stopped == {"text": text, "mark": mark}
    assert hello["text"].startswith("Hello! I am chat-bff's offline scripted model")
    assert hello["mark"] is None
    assert seen["stopped_reloaded"]["answers"][-2:] == seen["after_stop"]["answers"][-2:]


def assert_stored_as_stopped(stored: list[dict[str, Any]], text: str) -> None:
    """The question and the answer Stop cut, as the API gives them back: the text shown,
    kept, and marked incomplete because it was cancelled."""
    asked, answer = stored
    assert (asked["role"], asked["content"]) == ("user", "tell me a saga")
    assert answer["role"] == "assistant"
    assert [(p["type"], p["data"]) for p in answer["content"]] == [("text", {"text": text})]
    assert answer["metadata"]["status"] == "incomplete"
    assert answer["metadata"]["reason"] == "cancelled"
