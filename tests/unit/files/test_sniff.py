"""The kind of a file comes from its bytes; CSV and JSON from parsing them."""

from __future__ import annotations

import pytest

from app.domain.files import FileRejected, UnsupportedFileType
from app.files.sniff import refuse_early, sniff
from tests.files import samples


@pytest.mark.parametrize(
    ("data", "kind"),
    [
        (samples.pdf(["x"]), "pdf"),
        (samples.png(), "png"),
        (b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + b"\x00" * 32, "jpeg"),
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
