"""PDF text, page by page (pypdf, lenient about broken structure). A PDF with no text
on any page (a scan) says so in its text, for the model to tell the user."""

from __future__ import annotations

import io
import logging

from app.domain.files import Extraction, FileRejected
from app.files.extract.budget import Budget, TextBuilder

NO_TEXT_LAYER = (
    "[This PDF has no text layer: its pages are images (a scan?), which are not read here."
    " Nothing of its content is known.]"
)

logging.getLogger("pypdf").setLevel(logging.ERROR)  # warnings about every odd xref


def extract_pdf(data: bytes, budget: Budget) -> Extraction:
    # Imported on the first PDF, not at start-up: most processes never read one.
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    try:
        reader = PdfReader(io.BytesIO(data), strict=False)
        if reader.is_encrypted and not reader.decrypt(""):
            raise FileRejected("The PDF is encrypted with a password.")
        pages = reader.pages
        count = len(pages)
    except (PyPdfError, ValueError, KeyError, TypeError, OSError, RecursionError) as exc:
        raise FileRejected("The PDF could not be read.") from exc
    out = TextBuilder(budget.limits.max_chars)
    found_text = False
    for number in range(count):
        budget.check_time()
        if number >= budget.limits.max_pages:
            out.cut(f"pages after {budget.limits.max_pages} left out of {count}")
            break
        try:
            text = pages[number].extract_text() or ""
        except (PyPdfError, ValueError, KeyError, TypeError, RecursionError, ZeroDivisionError):
            text = "[this page could not be read]"
        found_text = found_text or bool(text.strip())
        if not out.add(f"--- Page {number + 1} of {count} ---\n{text.strip()}\n\n"):
            out.cut(f"cut in page {number + 1} of {count}")
            break
    if count and not found_text:
        # A scan: without this the model sees empty pages and may guess at their content.
        out.add(NO_TEXT_LAYER)
    return Extraction(text=out.text(), truncated=out.truncated, note=out.note())
