"""Real files the tests make themselves, and hostile ones.

pdf(pages)          a valid multi-page PDF (raw PDF syntax with a correct xref), one
                    text line per page
endless_pdf()       a PDF cut off inside a content stream: no endstream, no xref, no EOF
xlsx(sheets)        a workbook with several sheets (openpyxl)
zip_bomb_xlsx()     a workbook-shaped zip whose sheet inflates to 20 MB of zeros
xlsx_rewritten(...) a workbook with its sheet's XML rewritten: a dimension claiming the
                    whole grid, a row past the dimension, XML cut in half
png()               a valid 2x2 PNG
exe()               the first bytes of a Windows executable, to be renamed report.pdf
"""

from __future__ import annotations

import io
import re
import struct
import zipfile
import zlib
from collections.abc import Callable

from openpyxl import Workbook


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def pdf(pages: list[str]) -> bytes:
    """A PDF with one page per string, each showing its string in Helvetica."""
    objects: list[bytes] = []
    page_ids = [4 + 2 * i for i in range(len(pages))]
    objects.append(b"<< /Type /Catalog /Pages 2 0 R >>")
    kids = " ".join(f"{i} 0 R" for i in page_ids)
    objects.append(f"<< /Type /Pages /Kids [{kids}] /Count {len(pages)} >>".encode())
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    for n, text in enumerate(pages):
        content = f"BT /F1 12 Tf 72 720 Td ({_escape(text)}) Tj ET".encode("latin-1")
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            f"/Resources << /Font << /F1 3 0 R >> >> /Contents {page_ids[n] + 1} 0 R >>".encode()
        )
        objects.append(b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream")
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for offset in offsets:
        out += b"%010d 00000 n \n" % offset
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


def endless_pdf(size: int = 200_000) -> bytes:
    """A PDF that never ends: its page's content stream runs to the end of the file."""
    head = pdf(["the only page"])
    cut = head.index(b"stream\n") + len(b"stream\n")
    return head[:cut] + b"BT (" + b"A" * size


def xlsx(sheets: dict[str, list[list[object]]]) -> bytes:
    book = Workbook()
    first = True
    for name, rows in sheets.items():
        sheet = book.active if first else book.create_sheet()
        assert sheet is not None
        sheet.title = name
        first = False
        for row in rows:
            sheet.append(row)
    buffer = io.BytesIO()
    book.save(buffer)
    return buffer.getvalue()


def xlsx_rewritten(data: bytes, rewrite: Callable[[bytes], bytes]) -> bytes:
    """The workbook with its first sheet's XML passed through `rewrite`."""
    buffer = io.BytesIO()
    with (
        zipfile.ZipFile(io.BytesIO(data)) as source,
        zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive,
    ):
        for info in source.infolist():
            body = source.read(info.filename)
            if info.filename == "xl/worksheets/sheet1.xml":
                body = rewrite(body)
            archive.writestr(info, body)
    return buffer.getvalue()


def xlsx_claiming(dimension: str, far_row: int) -> bytes:
    """A sheet with `top` in A1, whose `<dimension>` says `dimension`, and a cell `bottom`
    in row `far_row` (past a small dimension, or at the end of a claimed huge one)."""

    def rewrite(xml: bytes) -> bytes:
        xml = re.sub(
            rb"<dimension ref=\"[^\"]*\" ?/>", f'<dimension ref="{dimension}"/>'.encode(), xml
        )
        far = f'<row r="{far_row}"><c r="A{far_row}" t="inlineStr"><is><t>bottom</t></is></c></row>'
        return xml.replace(b"</sheetData>", far.encode() + b"</sheetData>")

    return xlsx_rewritten(xlsx({"S": [["top"]]}), rewrite)


def xlsx_broken_sheet() -> bytes:
    """A workbook whose sheet XML stops halfway through."""
    return xlsx_rewritten(xlsx({"S": [["a", "b"], [1, 2]]}), lambda xml: xml[: len(xml) // 2])


def zip_bomb_xlsx(inflated: int = 20 * 1024 * 1024) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", '<?xml version="1.0"?><Types/>')
        archive.writestr("xl/workbook.xml", '<?xml version="1.0"?><workbook/>')
        archive.writestr("xl/worksheets/sheet1.xml", b"\0" * inflated)
    return buffer.getvalue()


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def png(width: int = 2, height: int = 2) -> bytes:
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    rows = b"".join(b"\0" + b"\xff\x00\x00" * width for _ in range(height))
    return (
        b"\x89PNG\r\n\x1a\n"
        + _chunk(b"IHDR", header)
        + _chunk(b"IDAT", zlib.compress(rows))
        + _chunk(b"IEND", b"")
    )


def exe() -> bytes:
    """What a renamed Windows program starts with (an MZ header, a PE signature)."""
    return (
        b"MZ\x90\x00\x03\x00\x00\x00\x04\x00\x00\x00\xff\xff\x00\x00"
        + b"\x00" * 44
        + (b"PE\x00\x00" + bytes(range(256)) * 40)
    )


CSV_QUOTED = (
    b"name,comment,amount\n"
    b'"Smith, Ada","said ""hello"", then left",12.5\n'
    b'"Lovelace","multi\nline",7\n'
    b"Babbage,plain,3\n"
)
