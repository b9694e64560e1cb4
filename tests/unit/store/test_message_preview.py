"""A conversation's preview: the start of its latest message's text, spaces flattened,
at most 200 characters, whatever the length of the message."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from app.domain.messages import Message
from app.store.repos.message_values import preview


def _whole_text_flattened(text: str) -> str | None:
    """What the preview is: the whole text flattened, then cut."""
    flat = re.sub(r"\s+", " ", text.replace("\x00", "")).strip()
    if not flat:
        return None
    return flat if len(flat) <= 200 else flat[:199].rstrip() + "…"


@given(
    st.lists(
        st.one_of(
            st.text(alphabet="ab", min_size=1, max_size=30),
            st.text(alphabet=" \n\t\x00", min_size=1, max_size=400),
        ),
        max_size=60,
    )
)
def test_a_preview_is_the_start_of_the_whole_text_flattened(pieces: list[str]) -> None:
    text = "".join(pieces)
    message = Message(id="m", role="assistant", content=text)

    assert preview(message) == _whole_text_flattened(text)


def test_a_long_answer_previews_its_first_200_characters() -> None:
    message = Message(id="m", role="assistant", content="word  " * 10_000)

    shown = preview(message)

    assert shown is not None
    assert (len(shown), shown[-1]) == (200, "…")
    assert "  " not in shown
