"""A text file's bytes as text: UTF-8 (a BOM allowed), or else a legacy single-byte code
page, since spreadsheets exported on Windows come as cp1251 (Russian) or cp1252 (Western
European) more often than as UTF-8.

The two code pages share their bytes; they differ in how the bytes sit: Cyrillic words
are runs of high bytes, while accented letters in Western text stand alone between ASCII
letters. Binary (a NUL byte, or more than 1% control characters) is not text at all.
"""

from __future__ import annotations

import re

_CONTROLS = bytes(b for b in range(32) if b not in b"\t\n\r\f")
_HIGH_RUN = re.compile(rb"[\x80-\xff]{2,}")


def _legacy_encoding(data: bytes) -> str:
    high = sum(1 for b in data if b >= 0x80)
    in_runs = sum(len(run) for run in _HIGH_RUN.findall(data))
    return "cp1251" if in_runs * 2 >= high else "cp1252"


def decode_text(data: bytes) -> tuple[str, str] | None:
    """`(text, encoding)`, or None when the bytes are binary."""
    if b"\x00" in data:
        return None
    try:
        return data.decode("utf-8-sig"), "utf-8"
    except UnicodeDecodeError:
        pass
    controls = len(data) - len(data.translate(None, _CONTROLS))
    if controls * 100 > len(data):
        return None
    encoding = _legacy_encoding(data)
    return data.decode(encoding, errors="replace"), encoding
