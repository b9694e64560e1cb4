"""Text is made valid where it enters: lone surrogates and NUL become U+FFFD, pairs stay."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.domain.text import REPLACEMENT, SurrogateJoiner, valid_json, valid_text


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("plain", "plain"),
        ("a\ud800b", f"a{REPLACEMENT}b"),
        ("\udc00", REPLACEMENT),
        ("nul\x00here", f"nul{REPLACEMENT}here"),
        ("\ud83d\ude00", "\U0001f600"),  # a pair escaped separately is one character
        ("\udc00\ud800", REPLACEMENT * 2),  # low then high is no pair
        ("\ud83d\ud83d\ude00", REPLACEMENT + "\U0001f600"),
    ],
)
def test_valid_text_replaces_what_no_encoder_accepts(raw: str, expected: str) -> None:
    assert valid_text(raw) == expected


def test_a_json_escape_of_a_lone_surrogate_becomes_encodable() -> None:
    decoded = json.loads('{"delta": "\\ud800 tail"}')

    fixed = valid_json(decoded)

    assert fixed["delta"].encode("utf-8") == "\ufffd tail".encode()


def test_valid_json_fixes_keys_and_nested_values_and_leaves_other_values() -> None:
    value = {"k\ud800": ["x\x00", {"n": 1, "b": True, "none": None}]}

    assert valid_json(value) == {
        f"k{REPLACEMENT}": [f"x{REPLACEMENT}", {"n": 1, "b": True, "none": None}]
    }


def test_an_emoji_split_across_two_deltas_is_rejoined() -> None:
    joiner = SurrogateJoiner()

    parts = [joiner.feed("smile \ud83d"), joiner.feed("\ude00 done"), joiner.flush()]

    assert parts == ["smile ", "\U0001f600 done", ""]


def test_a_high_surrogate_never_followed_by_its_low_half_becomes_a_replacement() -> None:
    joiner = SurrogateJoiner()

    parts = [joiner.feed("a\ud83d"), joiner.feed("b"), joiner.feed("c\ud83d"), joiner.flush()]

    assert "".join(parts) == f"a{REPLACEMENT}bc{REPLACEMENT}"


_HALVES = st.sampled_from(["\ud83d", "\ude00", "\ud800", "\udfff", "\x00"])


@given(st.lists(st.text(alphabet=st.one_of(st.characters(), _HALVES)), max_size=8))
def test_joined_deltas_always_encode_as_utf8(deltas: list[str]) -> None:
    joiner = SurrogateJoiner()

    out = "".join(joiner.feed(d) for d in deltas) + joiner.flush()

    out.encode("utf-8")
    assert "\x00" not in out
