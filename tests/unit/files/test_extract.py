"""Extraction stays within its budget (characters, pages, rows, cells, time) and says
what it cut; broken documents are refused, never half-read silently."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable

import pytest

from app.domain.files import Extraction, FileRejected, UnsupportedFileType
from app.files.extract import Budget, ExtractionTimeout, ExtractLimits, extract
from app.files.sniff import sniff
from tests.files import samples


def _budget(seconds: float = 10.0, **limits: int) -> Budget:
    return Budget(ExtractLimits(**limits), seconds)


def test_every_page_of_a_pdf_is_read_in_order() -> None:
    result = extract("pdf", samples.pdf(["alpha", "beta", "gamma"]), _budget())

    assert result is not None
    assert result.text.index("alpha") < result.text.index("beta") < result.text.index("gamma")
    assert "--- Page 3 of 3 ---" in result.text
    assert not result.truncated


def test_pages_past_the_page_limit_are_left_out_and_said_so() -> None:
    data = samples.pdf([f"page text {i}" for i in range(6)])

    result = extract("pdf", data, _budget(max_pages=2))

    assert result is not None
    assert "page text 1" in result.text
    assert "page text 2" not in result.text
    assert result.truncated
    assert result.note == "pages after 2 left out of 6"


def test_text_past_the_character_limit_is_cut() -> None:
    result = extract("pdf", samples.pdf(["x" * 50, "y" * 50]), _budget(max_chars=60))

    assert result is not None
    assert len(result.text) == 60
    assert result.truncated


def test_an_unreadable_pdf_is_refused() -> None:
    with pytest.raises(FileRejected):
        extract("pdf", samples.endless_pdf(), _budget())


def test_a_spent_deadline_stops_the_reader() -> None:
    with pytest.raises(ExtractionTimeout):
        extract("pdf", samples.pdf(["a", "b"]), _budget(seconds=-1))


def test_each_sheet_becomes_a_table() -> None:
    data = samples.xlsx({"People": [["name", "age"], ["Ada", 36]], "Empty": [], "X": [[1]]})

    result = extract("xlsx", data, _budget())

    assert result is not None
    assert "## Sheet: People\n\n| name | age |\n| --- | --- |\n| Ada | 36 |" in result.text
    assert "## Sheet: Empty" in result.text
    assert "## Sheet: X" in result.text


def test_rows_and_cells_past_their_limits_are_left_out() -> None:
    rows: list[list[object]] = [[f"r{i}", i] for i in range(50)]
    data = samples.xlsx({"A": rows, "B": rows})

    by_rows = extract("xlsx", data, _budget(max_rows=10))
    by_cells = extract("xlsx", data, _budget(max_cells=30))

    assert by_rows is not None and by_cells is not None
    assert "| r9 | 9 |" in by_rows.text and "| r10 | 10 |" not in by_rows.text
    assert by_rows.truncated and "sheet A: rows after 10 left out" in (by_rows.note or "")
    assert "## Sheet: B" not in by_cells.text
    assert by_cells.truncated


def test_a_zip_bomb_never_reaches_the_spreadsheet_reader() -> None:
    with pytest.raises(FileRejected, match="archive bomb"):
        extract("xlsx", samples.zip_bomb_xlsx(), _budget())


def test_csv_quoted_fields_keep_their_commas_quotes_and_lines() -> None:
    result = extract("csv", samples.CSV_QUOTED, _budget())

    assert result is not None
    assert result.text.startswith("CSV: 4 rows (header included), 3 columns.")
    assert '| Smith, Ada | said "hello", then left | 12.5 |' in result.text
    assert "| Lovelace | multi line | 7 |" in result.text


def test_a_long_csv_is_counted_whole_but_shown_within_the_row_limit() -> None:
    data = ("k,v\n" + "".join(f"{i},{i * 2}\n" for i in range(500))).encode()

    result = extract("csv", data, _budget(max_rows=20))

    assert result is not None
    assert "CSV: 501 rows" in result.text
    assert "| 18 | 36 |" in result.text and "| 19 | 38 |" not in result.text
    assert result.note is not None and "left out of 501" in result.note


def test_json_is_summarised_then_cut_within_the_budget() -> None:
    data = json.dumps({"items": [{"id": i, "name": f"n{i}"} for i in range(200)]}).encode()

    result = extract("json", data, _budget(max_chars=300))

    assert result is not None
    assert result.text.startswith(
        "JSON: object with 1 keys (items: array of 200 items; first item: object with 2 keys "
        "(id, name))."
    )
    assert len(result.text) == 300
    assert result.truncated


def test_images_have_no_text() -> None:
    assert extract("png", samples.png(), _budget()) is None


def test_rows_past_a_stale_dimension_are_still_read() -> None:
    # Some writers leave `<dimension ref="A1:A1">` however far the data goes.
    result = extract("xlsx", samples.xlsx_claiming("A1:A1", far_row=40), _budget())

    assert result is not None
    assert "| top |" in result.text and "| bottom |" in result.text


def test_a_sheet_claiming_the_whole_grid_is_read_before_its_deadline() -> None:
    # A 5 KB sheet that says A1:XFD1048576 (16384 columns by a million rows): padded out
    # to what it claims, its rows would keep a worker busy for hours past the deadline,
    # holding an extraction slot that every other upload waits for.
    data = samples.xlsx_claiming("A1:XFD1048576", far_row=1_048_576)
    outcome: list[object] = []
    worker = threading.Thread(
        target=lambda: outcome.append(_attempt(lambda: extract("xlsx", data, _budget(5.0)))),
        daemon=True,
    )

    worker.start()
    worker.join(60)

    assert not worker.is_alive(), "the reader ran on past its deadline"
    result = outcome[0]
    assert isinstance(result, ExtractionTimeout) or (
        isinstance(result, Extraction) and "| bottom |" in result.text
    )


def test_a_workbook_with_broken_sheet_xml_is_refused_not_an_error() -> None:
    with pytest.raises(FileRejected, match="spreadsheet could not be read"):
        extract("xlsx", samples.xlsx_broken_sheet(), _budget())


def _attempt(read: Callable[[], object]) -> object:
    try:
        return read()
    except FileRejected as exc:
        return exc


RUSSIAN_CSV = "имя;сумма;город\nИван;10;Москва\nПётр;20;Казань\nОльга;30;Тверь\n"  # noqa: RUF001


@pytest.mark.parametrize(
    ("data", "encoding", "row"),
    [
        (RUSSIAN_CSV.encode("cp1251"), "cp1251", "| Пётр | 20 | Казань |"),
        ("name;city\nRené;Köln\nJosé;Málaga\n".encode("cp1252"), "cp1252", "| José | Málaga |"),
    ],
)
def test_a_csv_saved_in_a_windows_code_page_is_read_and_says_so(
    data: bytes, encoding: str, row: str
) -> None:
    assert sniff(data) == "csv"
    result = extract("csv", data, _budget())

    assert result is not None
    assert f"columns. Decoded from {encoding}." in result.text
    assert row in result.text


def test_json_lines_are_json_read_record_by_record() -> None:
    data = b'{"a":1,"b":"x"}\n{"a":2,"b":"y"}\n\n{"a":3,"b":"z"}\n'

    assert sniff(data) == "json"
    result = extract("json", data, _budget())

    assert result is not None
    assert result.text.startswith(
        "JSON Lines: 3 records; first record: object with 2 keys (a, b).\n\n"
    )
    assert '{"a":3,"b":"z"}' in result.text


def test_columns_past_the_limit_are_left_out_and_said_so() -> None:
    header = ",".join(f"c{i}" for i in range(300))
    data = f"{header}\n{','.join('1' * 300)}\n".encode()

    result = extract("csv", data, _budget(max_columns=20))

    assert result is not None
    assert "| c19 |" in result.text and "c20" not in result.text
    assert result.truncated
    assert result.note == "csv: columns after 20 left out"


@pytest.mark.parametrize(
    ("data", "said"),
    [
        (b'{"a": 1, "b": [1, 2,}', "does not parse: Expecting value: line 1 column 21"),
        (b"[" * 5000 + b"]" * 5000, "The JSON is nested too deeply to read."),
    ],
)
def test_json_that_does_not_parse_says_why(data: bytes, said: str) -> None:
    with pytest.raises(UnsupportedFileType, match=re.escape(said)):
        sniff(data)


def test_a_pdf_without_a_text_layer_says_so() -> None:
    # A scan: each page only paints an image, so there is no text to extract.
    scan = samples.pdf(["", ""])

    result = extract("pdf", scan, _budget())

    assert result is not None
    assert "--- Page 2 of 2 ---" in result.text
    assert "This PDF has no text layer" in result.text
    text_pdf = extract("pdf", samples.pdf(["words"]), _budget())
    assert text_pdf is not None and "no text layer" not in text_pdf.text
