"""A streamed Chat Completions text chunk is written from a template made once per stream:
whatever the text (quotes, backslashes, control characters, emoji, U+2028, markup), and
whatever the completion id and model are called, the bytes are those the chunk models
serialise to."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from app.api.encoders.chat_chunks import ChatChunkEncoder
from app.api.schemas.openai_chunks import ChunkDelta

_TEXT = st.text(st.characters(codec="utf-8"))  # any text but lone surrogates


@given(text=_TEXT, model=_TEXT, completion_id=_TEXT)
def test_a_text_frame_is_the_serialised_chunk(text: str, model: str, completion_id: str) -> None:
    encoder = ChatChunkEncoder(completion_id, model, 1_700_000_000, frozenset())
    assert encoder._text_frame(text) == encoder._chunk(ChunkDelta(content=text))


def test_every_text_frame_of_a_stream_uses_the_same_envelope() -> None:
    encoder = ChatChunkEncoder("chatcmpl-1", 'odd "content":"" model', 1, frozenset())
    for text in ("", "Hello", ' "content":"" ', "\n\n"):
        assert encoder._text_frame(text) == encoder._chunk(ChunkDelta(content=text))
