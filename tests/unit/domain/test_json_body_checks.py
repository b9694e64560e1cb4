"""A request body's two checks read its text before walking its value: a text with no `\\u`
escape, surrogate or NUL holds no string `valid_json` would change, and a text with no more
brackets and braces than the limit cannot nest deeper than it. Both must say so only when
the walk would agree."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from app.domain import jsontext
from app.domain.text import json_text_valid, valid_json

# Text with what the checks look for: surrogates (lone and paired), NUL, escapes' backslashes.
_TEXT = st.text(
    alphabet=st.sampled_from(["a", "\\", "u", "0", "\x00", "\ud800", "\udc00", "é", "[", "{"])
    | st.characters(),
    max_size=12,
)
_JSON: st.SearchStrategy[Any] = st.recursive(
    st.none() | st.booleans() | st.integers() | _TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_TEXT, inner, max_size=4),
    max_leaves=20,
)


def _as_body(value: Any, ascii_only: bool) -> str:
    # As a client sends it, and as the service decodes it (UTF-8, surrogates passed).
    data = json.dumps(value, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")
    return jsontext.decode(data)


@given(_JSON, st.booleans())
def test_a_text_said_valid_parses_to_strings_valid_json_leaves_alone(
    value: Any, ascii_only: bool
) -> None:
    text = _as_body(value, ascii_only)
    parsed = jsontext.loads(text)
    if json_text_valid(text):
        assert valid_json(parsed) == parsed


@given(_JSON, st.booleans(), st.integers(min_value=0, max_value=6))
def test_a_text_said_shallow_is_no_deeper_than_the_levels(
    value: Any, ascii_only: bool, levels: int
) -> None:
    text = _as_body(value, ascii_only)
    if not jsontext.may_nest_deeper(text, levels):
        assert jsontext.depth(jsontext.loads(text)) <= levels


def test_what_needs_fixing_is_seen_in_the_text() -> None:
    assert json_text_valid('{"content": "Hi", "n": [1, 2]}')
    assert not json_text_valid('{"content": "H\\u0000i"}')  # an escape may hold NUL
    assert not json_text_valid('{"content": "H\\ud800i"}')
    assert not json_text_valid('{"content": "H\ud800i"}')  # a raw surrogate, passed through
    assert not jsontext.may_nest_deeper("[[[]]]", 3)
    assert jsontext.may_nest_deeper("[[[[]]]]", 3)
