"""The kind of a file comes from its bytes; CSV and JSON from parsing them."""

from __future__ import annotations

import pytest

from app.domain.files import FileRejected, UnsupportedFileType
from app.files.sniff import refuse_early, sniff
from tests.files import samples

JPEG = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + b"\x00" * 32 + b"\xff\xd9"
GIF = b"GIF89a\x01\x00\x01\x00\x80\x00\x00\xff\xff\xff\x00\x00\x00;"
WEBP = b"RIFF\x1a\x00\x00\x00WEBPVP8L\x0d\x00\x00\x00/\x00\x00\x00\x10\x07\x10\x11"
OLD_XLS = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 504


@pytest.mark.parametrize(
    ("data", "kind"),
    [
        (samples.pdf(["x"]), "pdf"),
        (samples.png(), "png"),
        (JPEG, "jpeg"),
        (samples.xlsx({"S": [[1]]}), "xlsx"),
        (samples.CSV_QUOTED, "csv"),
        (b"\xef\xbb\xbfa;b\n1;2\n3;4\n", "csv"),
        (b'[{"a": 1}, {"a": 2}]', "json"),
        ('{"имя": "Ада"}'.encode(), "json"),
    ],
)
def test_supported_kinds_are_recognised(data: bytes, kind: str) -> None:
    assert sniff(data) == kind


@pytest.mark.parametrize(
    "data",
    [
        samples.exe(),
        b"plain words, not a table\n",
        b"one line only",
        b"{broken json",
        "текст".encode("cp1251"),
        samples.zip_bomb_xlsx(100).replace(b"xl/workbook.xml", b"docProps/app.xml"),
    ],
)
def test_anything_else_is_unsupported(data: bytes) -> None:
    with pytest.raises(UnsupportedFileType):
        sniff(data)


def test_a_bomb_shaped_like_a_workbook_is_rejected() -> None:
    with pytest.raises(FileRejected):
        sniff(samples.zip_bomb_xlsx())


def test_an_executable_is_refused_from_its_first_bytes() -> None:
    with pytest.raises(UnsupportedFileType):
        refuse_early(samples.exe()[:8192])


def test_a_head_cut_inside_a_character_is_still_text() -> None:
    head = ("a,b\n" + "ж" * 10).encode()[:-1]

    refuse_early(head)  # does not raise


@pytest.mark.parametrize(
    ("data", "kind"),
    [(samples.png(64, 64)[:60], "PNG"), (JPEG[:-2], "JPEG"), (samples.png()[:-12], "PNG")],
)
def test_an_image_cut_short_is_rejected(data: bytes, kind: str) -> None:
    with pytest.raises(FileRejected, match=f"The {kind} image is truncated or damaged"):
        sniff(data)


@pytest.mark.parametrize(
    ("data", "said"),
    [
        (GIF, "The file is a GIF image; images are accepted as PNG or JPEG."),
        (WEBP, "The file is a WEBP image; images are accepted as PNG or JPEG."),
        (OLD_XLS, "old binary Office document (.xls, .doc); save it as XLSX or PDF."),
    ],
)
def test_a_refused_image_or_old_office_file_is_named(data: bytes, said: str) -> None:
    with pytest.raises(UnsupportedFileType) as refused:
        refuse_early(data)
    with pytest.raises(UnsupportedFileType) as sniffed:
        sniff(data)

    for error in (refused.value, sniffed.value):
        assert said in error.message
        assert "supported: PDF, XLSX, CSV, JSON, PNG, JPEG" in error.message


def test_an_empty_file_is_rejected_as_empty() -> None:
    with pytest.raises(FileRejected, match="The file is empty"):
        sniff(b"")
