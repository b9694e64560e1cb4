"""The chunked-coding decoder the upstream connection reads bodies with
(`app.providers.chunked`): the data, whole, however the reads cut it; h11's errors."""

from __future__ import annotations

import pytest

from app.providers.chunked import ChunkedDecoder, ProtocolError

FRAMES = [b'data: {"n": %d}\n\n' % n for n in range(12)] + [b"x" * 300]
BODY = b"".join(b"%x\r\n%s\r\n" % (len(f), f) for f in FRAMES) + b"0\r\n\r\n"
DATA = b"".join(FRAMES)


def decode(*reads: bytes) -> tuple[bytes, ChunkedDecoder]:
    decoder = ChunkedDecoder()
    out = b"".join(decoder.feed(read) for read in reads)
    return out, decoder


def test_a_body_in_one_read_comes_out_whole() -> None:
    out, decoder = decode(BODY)
    assert out == DATA
    assert decoder.done and decoder.extra == b""


@pytest.mark.parametrize("cut", range(1, len(BODY)))
def test_a_body_cut_anywhere_across_two_reads_decodes_the_same(cut: int) -> None:
    out, decoder = decode(BODY[:cut], BODY[cut:])
    assert out == DATA
    assert decoder.done


def test_a_body_read_one_byte_at_a_time_decodes_the_same() -> None:
    out, decoder = decode(*(BODY[i : i + 1] for i in range(len(BODY))))
    assert out == DATA
    assert decoder.done


def test_data_comes_out_as_it_arrives_not_when_its_chunk_is_complete() -> None:
    decoder = ChunkedDecoder()
    assert decoder.feed(b"a\r\nhello") == b"hello"
    assert decoder.feed(b"world\r\n") == b"world"
    assert not decoder.done


def test_extensions_and_trailers_are_skipped() -> None:
    body = b"5;name=value\r\nhello\r\n0\r\nExpires: never\r\nX-Other: 1\r\n\r\n"
    out, decoder = decode(body)
    assert out == b"hello"
    assert decoder.done and decoder.extra == b""


def test_upper_case_hex_sizes_are_read() -> None:
    frame = b"y" * 0x1F
    out, _ = decode(b"1F\r\n" + frame + b"\r\n0\r\n\r\n")
    assert out == frame


def test_bytes_past_the_end_of_the_body_are_kept_apart() -> None:
    _, decoder = decode(BODY + b"HTTP/1.1 200 OK\r\n")
    assert decoder.done
    assert decoder.extra == b"HTTP/1.1 200 OK\r\n"


@pytest.mark.parametrize(
    "body",
    [
        b"zz\r\nhello\r\n",  # not hex
        b"\r\nhello\r\n",  # no size
        b"123456789012345678901\r\n",  # more than 20 digits
        b"5\r\nhelloXX",  # data not ended by CRLF
        b"5\r\nhello\rX",
    ],
)
def test_a_malformed_body_is_a_protocol_error(body: bytes) -> None:
    with pytest.raises(ProtocolError):
        decode(body)


def test_a_size_line_past_the_limit_is_a_protocol_error() -> None:
    decoder = ChunkedDecoder(max_line=16)
    with pytest.raises(ProtocolError):
        decoder.feed(b"1" * 17)


@pytest.mark.parametrize("cut", [0, 3, len(BODY) - 5, len(BODY) - 1])
def test_a_body_that_ends_before_its_last_chunk_is_a_protocol_error(cut: int) -> None:
    _, decoder = decode(BODY[:cut])
    with pytest.raises(ProtocolError, match="incomplete chunked read"):
        decoder.eof()


def test_the_end_of_the_connection_after_the_last_chunk_is_fine() -> None:
    _, decoder = decode(BODY)
    decoder.eof()
