"""The kind of a file, from its bytes alone.

Binary kinds have magic numbers (puremagic reads them): PDF, PNG, JPEG, and zip for XLSX
(then confirmed by the workbook's parts, and checked for bombs). CSV and JSON have none,
so a text file is what it parses as: JSON when `json.loads` takes it (or every line is
a JSON object or array: JSON Lines), CSV when a delimiter splits most rows into the same
two or more columns. A CSV may be UTF-8 or a legacy code page (`app.files.text`).
Anything else, a renamed `.exe` or a plain text file, is an `UnsupportedFileType` naming
what is accepted (for text that looks like JSON, why it does not parse).

A PNG or JPEG must be whole (a PNG's chunks run to IEND, a JPEG has its end marker), and
a refused image or old binary Office file is named in the message (a GIF is told that
images are PNG or JPEG). `refuse_early` answers from the first bytes, so an upload that
is plainly not a supported kind stops before the rest of it is read.
"""

from __future__ import annotations

import csv
import io
import json
from typing import TYPE_CHECKING

from app.domain.files import FileKind, FileRejected, UnsupportedFileType
from app.files.archive import ArchiveLimits, check_archive, is_xlsx
from app.files.text import decode_text

if TYPE_CHECKING:
    from puremagic import PureMagicWithConfidence

HEAD_BYTES = 8192
_ZIP_MAGIC = b"PK\x03\x04"
_OLE2_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
_MAGIC_KINDS: dict[str, FileKind] = {
    "application/pdf": "pdf",
    "image/png": "png",
    "image/jpeg": "jpeg",
}
_CSV_DELIMITERS = ",;\t|"


def _magic(head: bytes) -> list[PureMagicWithConfidence]:
    """puremagic's matches for the head (none where it finds none). Imported on the first
    upload: its table of signatures is about 1.2 MB of a worker that may take none."""
    import puremagic

    try:
        return puremagic.magic_string(head)
    except (puremagic.PureError, ValueError):
        return []


def _magic_kind(head: bytes) -> FileKind | None:
    for match in _magic(head):
        kind = _MAGIC_KINDS.get(match.mime_type)
        if kind is not None:
            return kind
    return None


def _text(data: bytes, *, partial: bool) -> str | None:
    """The text of UTF-8 bytes (a BOM allowed); None for binary. `partial` forgives a
    character cut at the end of a head."""
    if b"\x00" in data:
        return None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        if partial and exc.start >= len(data) - 3:
            return data[: exc.start].decode("utf-8-sig", errors="strict")
        return None


def _what_it_is(head: bytes) -> str:
    """What a refused binary file is, when its magic number says so."""
    if head.startswith(_OLE2_MAGIC):
        return "The file is an old binary Office document (.xls, .doc); save it as XLSX or PDF."
    for match in _magic(head):
        if match.mime_type.startswith("image/"):
            subtype = match.mime_type.split("/", 1)[1].upper()
            return f"The file is a {subtype} image; images are accepted as PNG or JPEG."
    return "The file is not a PDF, spreadsheet, image or UTF-8 text."


def refuse_early(head: bytes) -> None:
    """Raise `UnsupportedFileType` when the first bytes already rule every kind out."""
    if _magic_kind(head) is not None or head.startswith(_ZIP_MAGIC):
        return
    if _text(head, partial=True) is None and decode_text(head) is None:
        raise UnsupportedFileType(_what_it_is(head))


def _png_is_whole(data: bytes) -> bool:
    """Chunks from the signature to IEND, each within the file (CRCs are not checked)."""
    at = len(_PNG_MAGIC)
    first = True
    while at + 8 <= len(data):
        length = int.from_bytes(data[at : at + 4], "big")
        kind = data[at + 4 : at + 8]
        if first and kind != b"IHDR":
            return False
        first = False
        at += 12 + length
        if at > len(data):
            return False
        if kind == b"IEND":
            return True
    return False


def check_image(kind: FileKind, data: bytes) -> None:
    """Refuse an image cut short (a broken download, a half-written file): a model's API
    would refuse it later with a less useful error, in the middle of a conversation."""
    whole = _png_is_whole(data) if kind == "png" else data.rfind(b"\xff\xd9") > 2
    if not whole:
        raise FileRejected(f"The {kind.upper()} image is truncated or damaged.")


def _is_csv(text: str) -> bool:
    lines = text.splitlines()[:200]
    if len(lines) < 2:
        return False
    sample = "\n".join(lines)
    for delimiter in _CSV_DELIMITERS:
        rows = [r for r in csv.reader(io.StringIO(sample), delimiter=delimiter) if r]
        if len(rows) < 2 or len(rows[0]) < 2:
            continue
        width = len(rows[0])
        same = sum(1 for r in rows if len(r) == width)
        if same >= 0.9 * len(rows):
            return True
    return False


def _json_problem(text: str) -> str | None:
    """Why JSON text does not parse; None when it does."""
    try:
        json.loads(text)
    except RecursionError:
        return "The JSON is nested too deeply to read."
    except ValueError as exc:
        return f"The text looks like JSON but does not parse: {exc}."
    return None


def is_json_lines(text: str) -> bool:
    """JSON Lines (NDJSON): two or more lines, each a JSON object or array."""
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) < 2:
        return False
    for line in lines:
        try:
            value = json.loads(line)
        except (ValueError, RecursionError):
            return False
        if not isinstance(value, dict | list):
            return False
    return True


def _text_kind(data: bytes) -> FileKind:
    decoded = decode_text(data)
    if decoded is None:
        raise UnsupportedFileType(_what_it_is(data[:HEAD_BYTES]))
    text, encoding = decoded
    problem = None
    stripped = text.strip()
    if encoding == "utf-8" and stripped[:1] in ("{", "["):  # JSON is UTF-8 (RFC 8259)
        problem = _json_problem(stripped)
        if problem is None or is_json_lines(text):
            return "json"
    if _is_csv(text):
        return "csv"
    raise UnsupportedFileType(problem or "The text is neither valid JSON nor CSV.")


def sniff(data: bytes, archive_limits: ArchiveLimits | None = None) -> FileKind:
    """The kind of a whole file; `UnsupportedFileType` or `FileRejected` otherwise.

    Blocking (parses up to the whole file): call it in a thread.
    """
    if not data:
        raise FileRejected("The file is empty.")
    kind = _magic_kind(data[:HEAD_BYTES])
    if kind in ("png", "jpeg"):
        check_image(kind, data)
    if kind is not None:
        return kind
    if data.startswith(_ZIP_MAGIC):
        if not is_xlsx(data):
            raise UnsupportedFileType("The archive is not an XLSX workbook.")
        check_archive(data, archive_limits or ArchiveLimits())
        return "xlsx"
    return _text_kind(data)
