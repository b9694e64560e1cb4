"""XLSX sheets as Markdown tables (openpyxl in read-only mode, values not formulas).

The archive is checked for bombs first (`app.files.archive`); then rows, columns and
cells are bounded per sheet and overall.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Iterable
from typing import Any

from app.domain.files import Extraction, FileRejected
from app.files.archive import ArchiveLimits, check_archive
from app.files.extract.budget import Budget, TextBuilder


def cell_text(value: Any) -> str:
    if value is None:
        return ""
    text = str(value).replace("\r", " ").replace("\n", " ").replace("|", "\\|")
    return text[:200]


def table_rows(rows: Iterable[list[str]], out: TextBuilder, budget: Budget, name: str) -> None:
    """Rows as a Markdown table (the first row is the header), within the budget."""
    width = 0
    wide = False
    for index, row in enumerate(rows):
        budget.check_time()
        if index >= budget.limits.max_rows:
            out.cut(f"{name}: rows after {budget.limits.max_rows} left out")
            return
        cells = row[: budget.limits.max_columns]
        if len(row) > len(cells) and not wide:
            wide = True
            out.cut(f"{name}: columns after {budget.limits.max_columns} left out")
        budget.cells += len(cells)
        if budget.cells > budget.limits.max_cells:
            out.cut(f"{name}: stopped at the cell limit ({budget.limits.max_cells})")
            return
        if index == 0:
            width = len(cells)
        if not out.add("| " + " | ".join(cells) + " |\n"):
            out.cut(f"{name}: cut at the size limit")
            return
        if index == 0:
            out.add("|" + " --- |" * max(width, 1) + "\n")


def _sheet_rows(sheet: Any, budget: Budget) -> Iterable[list[str]]:
    """The sheet's non-empty rows, read from its cells and not from the size it claims.

    `<dimension>` is whatever the writer put there: stale (rows past it would be left
    out) or the whole grid (every row padded to 16384 columns, a million of them). So it
    is dropped, each row is cut to the column limit before its cells are turned into
    text, and the deadline is checked on every row, empty ones included.
    """
    sheet.reset_dimensions()
    width = budget.limits.max_columns
    for values in sheet.iter_rows(values_only=True):
        budget.check_time()
        cells = [cell_text(v) for v in values[: width + 1]]
        while cells and not cells[-1]:
            cells.pop()
        if cells:
            yield cells


def extract_xlsx(data: bytes, budget: Budget) -> Extraction:
    check_archive(data, ArchiveLimits())
    try:
        from openpyxl import load_workbook  # on the first workbook: it imports numpy

        book = load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    except (zipfile.BadZipFile, KeyError, ValueError, TypeError, OSError) as exc:
        raise FileRejected("The spreadsheet could not be read.") from exc
    out = TextBuilder(budget.limits.max_chars)
    try:
        names = book.sheetnames
        for number, name in enumerate(names):
            if budget.cells >= budget.limits.max_cells:
                out.cut(f"sheets from {name!r} on left out (cell limit)")
                break
            if number >= budget.limits.max_sheets:
                out.cut(f"sheets after {budget.limits.max_sheets} left out of {len(names)}")
                break
            out.add(f"## Sheet: {name}\n\n")
            table_rows(_sheet_rows(book[name], budget), out, budget, f"sheet {name}")
            if out.full:
                break
            out.add("\n")
    except (zipfile.BadZipFile, KeyError, ValueError, TypeError, OSError) as exc:
        raise FileRejected("The spreadsheet could not be read.") from exc
    finally:
        book.close()
    return Extraction(text=out.text(), truncated=out.truncated, note=out.note())
