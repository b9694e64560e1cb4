"""The raw SSE decoder the providers read streamed answers with (`app.providers._sse`)."""

from __future__ import annotations

import pytest

from app.providers import _sse
from app.providers._sse import EventTooLarge, SSEDecoder, SSEvent, is_blank

TWO_CHUNKS = (
    b'data: {"choices":[{"delta":{"content":"Hel"}}]}\n\n'
    b'data: {"choices":[{"delta":{"content":"lo"}}]}\n\n'
)
EXPECTED = [
    SSEvent(b"", b'{"choices":[{"delta":{"content":"Hel"}}]}'),
    SSEvent(b"", b'{"choices":[{"delta":{"content":"lo"}}]}'),
]


def decode(*reads: bytes) -> list[SSEvent]:
    decoder = SSEDecoder()
    return [event for read in reads for event in decoder.feed(read)]


def test_one_frame_per_read_gives_one_event_each() -> None:
    first, second = TWO_CHUNKS.split(b"\n\n")[:2]
    assert decode(first + b"\n\n", second + b"\n\n") == EXPECTED


def test_several_frames_in_one_read_all_come_out() -> None:
    assert decode(TWO_CHUNKS) == EXPECTED


@pytest.mark.parametrize("cut", range(1, len(TWO_CHUNKS)))
def test_a_frame_split_anywhere_across_two_reads_decodes_the_same(cut: int) -> None:
    assert decode(TWO_CHUNKS[:cut], TWO_CHUNKS[cut:]) == EXPECTED


def test_a_stream_read_one_byte_at_a_time_decodes_the_same() -> None:
    assert decode(*(TWO_CHUNKS[i : i + 1] for i in range(len(TWO_CHUNKS)))) == EXPECTED


@pytest.mark.parametrize("newline", [b"\r\n", b"\r"], ids=["crlf", "cr"])
def test_crlf_and_lone_cr_line_ends_read_like_lf(newline: bytes) -> None:
    body = TWO_CHUNKS.replace(b"\n", newline)
    assert decode(body) == EXPECTED
    assert decode(*(body[i : i + 1] for i in range(len(body)))) == EXPECTED


@pytest.mark.parametrize("cut", range(1, 7))
def test_a_crlf_blank_line_split_between_reads_ends_the_event_once(cut: int) -> None:
    body = b"data: a\r\n\r\ndata: b\r\n\r\n"
    split = body.index(b"\r\n") + cut - 1  # every cut through the first "\r\n\r\n"
    assert decode(body[:split], body[split:]) == [SSEvent(b"", b"a"), SSEvent(b"", b"b")]


def test_multi_line_data_joins_with_newlines() -> None:
    body = b'data: {"a":\ndata: 1,\ndata:\ndata: "b": 2}\n\n'
    (event,) = decode(body)
    assert event.data == b'{"a":\n1,\n\n"b": 2}'


def test_comments_and_events_without_data_are_not_dispatched() -> None:
    body = b": keep-alive\n\nevent: ping\n\n: hi\ndata: x\n\nid: 7\nretry: 10\n\n"
    assert decode(body) == [SSEvent(b"", b"x")]


def test_the_event_name_is_kept_and_only_one_space_after_the_colon_is_dropped() -> None:
    body = b"event: content_block_delta\ndata:  two spaces\n\nevent:error\ndata:{}\n\n"
    assert decode(body) == [
        SSEvent(b"content_block_delta", b" two spaces"),
        SSEvent(b"error", b"{}"),
    ]


def test_an_empty_data_line_is_an_event_with_blank_data() -> None:
    (event,) = decode(b"data:\n\n")
    assert event == SSEvent(b"", b"")
    assert is_blank(event.data)
    assert is_blank(b"  ")
    assert not is_blank(b"{}")


def test_a_field_without_a_colon_is_a_field_with_an_empty_value() -> None:
    assert decode(b"data\n\n") == [SSEvent(b"", b"")]


def test_extra_blank_lines_between_events_are_ignored() -> None:
    assert decode(b"\n\n\ndata: a\n\n\n\n\ndata: b\n\n") == [
        SSEvent(b"", b"a"),
        SSEvent(b"", b"b"),
    ]


def test_a_partial_event_is_held_until_its_blank_line() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\n") == []
    assert decoder.feed(b"\n") == [SSEvent(b"", b"a")]


def test_empty_reads_change_nothing_even_between_cr_and_lf() -> None:
    assert decode(b"data: a\r", b"", b"\n", b"", b"\r\n") == [SSEvent(b"", b"a")]


@pytest.mark.parametrize("cut", range(4))
def test_a_leading_byte_order_mark_is_skipped_even_split(cut: int) -> None:
    body = b"\xef\xbb\xbfdata: a\n\n"
    assert decode(body[:cut], body[cut:]) == [SSEvent(b"", b"a")]


def test_a_byte_order_mark_after_the_start_is_not_skipped() -> None:
    assert decode(b"data: a\n\n", b"\xef\xbb\xbfdata: b\n\n") == [SSEvent(b"", b"a")]


def test_an_event_that_never_ends_is_refused_past_the_limit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A broken upstream streaming one endless event does not make the process hold it."""
    monkeypatch.setattr(_sse, "MAX_EVENT_BYTES", 1000, raising=False)
    decoder = SSEDecoder()
    decoder.feed(b"data: " + b"x" * 500)
    decoder.feed(b"x" * 400)
    with pytest.raises(EventTooLarge):
        decoder.feed(b"x" * 200)


def test_a_large_event_within_the_limit_decodes_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_sse, "MAX_EVENT_BYTES", 1000, raising=False)
    frame = b"data: " + b"x" * 990 + b"\n\n"
    assert decode(*(frame[i : i + 7] for i in range(0, len(frame), 7))) == [
        SSEvent(b"", b"x" * 990)
    ]
