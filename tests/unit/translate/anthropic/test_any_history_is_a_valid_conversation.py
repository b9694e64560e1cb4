"""Whatever history we hold, what we send is a conversation Anthropic accepts (a property)."""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tests.unit.translate.anthropic.wire import assistant, convert, text, thinking, tool, user

_STATUSES = ["loading", "waitingConfirmation", "waitingSubmission", "success", "error", "cancelled"]


_texts = st.sampled_from(["", " ", "Hi", "More text"])


_parts = st.one_of(
    _texts.map(text),
    st.tuples(_texts, st.sampled_from([None, "sig"])).map(lambda t: thinking(*t)),
    st.tuples(st.sampled_from(_STATUSES), st.sampled_from([None, "ok", {"n": 1}])).map(
        lambda t: tool("?", *t)
    ),
)


_messages = st.one_of(
    _texts.map(user),
    _texts.map(lambda t: {"role": "system", "content": t}),
    st.lists(_parts, max_size=5).map(lambda parts: assistant(*parts)),
)


def _with_unique_ids(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    counter = 0
    for message in history:
        for part in message["content"] if isinstance(message["content"], list) else []:
            if part["type"] == "tool":
                counter += 1
                part["id"] = part["data"]["toolCallId"] = f"t{counter}"
    return history


@given(st.lists(_messages, max_size=8).map(_with_unique_ids))
def test_any_history_becomes_a_valid_anthropic_conversation(history: list[dict[str, Any]]) -> None:
    _, messages = convert(history)
    roles = [m["role"] for m in messages]
    assert roles[:1] in ([], ["user"])
    assert all(a != b for a, b in itertools.pairwise(roles))
    for turn in messages:
        assert turn["content"]
        for item in turn["content"]:
            assert item["type"] != "text" or item["text"].strip()
    for position, turn in enumerate(messages):
        uses = [b["id"] for b in turn["content"] if b["type"] == "tool_use"]
        if not uses:
            continue
        following = messages[position + 1]
        results = [b["tool_use_id"] for b in following["content"][: len(uses)]]
        assert results == uses
