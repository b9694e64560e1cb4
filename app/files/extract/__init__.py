"""Documents as text a model can read, bounded in time, memory and output.

Each reader is a pure, blocking function `(data, budget) -> Extraction`, run in a worker
thread by `app.files.service`. The `Budget` bounds the output (characters, pages, rows,
cells) and carries a deadline the readers check between pages and rows, so a hostile
file cannot keep a thread busy long after its caller gave up. Past any bound the text
stops where it is, with `truncated` set and a note saying what was left out.

    PDF   pypdf, page by page           XLSX  openpyxl read-only, sheet by sheet, as tables
    CSV   csv, as a table               JSON  a summary of its shape, then the text itself
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace

from app.domain.errors import ChatBffError
from app.domain.files import Extraction, FileKind, FileRejected
from app.domain.text import valid_text
from app.files.extract.budget import Budget, ExtractionTimeout, ExtractLimits
from app.files.extract.pdf import extract_pdf
from app.files.extract.tabular import extract_csv, extract_json
from app.files.extract.xlsx import extract_xlsx

__all__ = ["Budget", "ExtractLimits", "ExtractionTimeout", "extract"]

log = logging.getLogger("chat_bff.files")

READERS: dict[FileKind, Callable[[bytes, Budget], Extraction]] = {
    "pdf": extract_pdf,
    "xlsx": extract_xlsx,
    "csv": extract_csv,
    "json": extract_json,
}
_NAMES: dict[FileKind, str] = {"pdf": "PDF", "xlsx": "spreadsheet", "csv": "CSV", "json": "JSON"}


def extract(kind: FileKind, data: bytes, budget: Budget) -> Extraction | None:
    """The document's text; None for kinds a model reads as they are (images).

    The readers parse hostile bytes with third-party libraries, which fail in more ways
    than they document (an XML `ParseError` from a half sheet, an `AssertionError` deep
    in a PDF filter): any failure is the file's, a `FileRejected` (422), never a 500.
    """
    reader = READERS.get(kind)
    if reader is None:
        return None
    try:
        read = reader(data, budget)
    except ChatBffError:
        raise
    except Exception as exc:
        log.info("document unreadable", extra={"kind": kind, "error": repr(exc)[:300]})
        raise FileRejected(f"The {_NAMES[kind]} could not be read.") from exc
    # Text enters valid: a JSON `\u` escape or a PDF can hold a lone surrogate or NUL.
    text = valid_text(read.text)
    return read if text is read.text else replace(read, text=text)
