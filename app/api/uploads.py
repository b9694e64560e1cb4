"""A multipart upload read as a stream: the file part's bytes are handed on chunk by
chunk as they arrive, never gathered whole (Starlette's form parser would spool the
entire file before the route could count it).

`read_file_part(request)` reads just far enough to know the file part's name, then
returns it with an iterator over the part's bytes; the caller (the file service) counts
and stores them. Parts other than the file (`field="file"`) are skipped, within a small
budget. A second file, or a file in a part with another name, is a 400 that says so:
taking one file and dropping the other would lose it without a word.

The file name is read as browsers write it: the HTML standard's multipart/form-data
encoding escapes three bytes of a name, `"` as `%22`, CR as `%0D` and LF as `%0A`, and
nothing else (fetch's FormData, httpx and curl do the same), so those three are undone
and every other `%` is kept as sent.

A `filename*` parameter (RFC 6266's ext-value, RFC 5987: `UTF-8''%E2%82%AC.csv`) names the
file too, and wins over `filename` when both are sent (RFC 6266 §4.3). RFC 7578 asks
senders not to use it in forms, but some do for a name beyond ASCII, alone or beside an
ASCII stand-in (.NET's MultipartFormDataContent, some Java and mobile clients); ignoring it
stored such a file under a made-up name or the stand-in. One that cannot be read (another
charset than UTF-8 or ISO-8859-1, a stray `%`, bytes that are not its charset) is
ignored, and `filename` names the file as before.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from urllib.parse import unquote_to_bytes

from python_multipart.exceptions import MultipartParseError
from python_multipart.multipart import MultipartParser, parse_options_header
from starlette.requests import Request

from app.domain.errors import InvalidRequest

FILE_FIELD = "file"
OTHER_FIELDS_BYTES = 64 * 1024
_FORM_ESCAPES = {b"%22": b'"', b"%0D": b"\r", b"%0A": b"\n"}
_FORM_ESCAPE = re.compile(rb"%22|%0D|%0A")


# `; name=value` where value is a quoted string or a run of anything but `;` and `"`.
_PARAMETER = re.compile(rb';\s*([^\s=;"]+)\s*=\s*("(?:[^"\\]|\\.)*"|[^;"]*)\s*')
# RFC 5987 ext-value: charset ' [language] ' value-chars (percent-encoded).
_EXT_VALUE = re.compile(rb"([A-Za-z0-9!#$&+^_`{}~-]+)'[A-Za-z0-9-]*'((?:%[0-9A-Fa-f]{2}|[^%\s])+)")
_EXT_CHARSETS = {"utf-8": "utf-8", "iso-8859-1": "latin-1"}


def _ext_value(value: bytes) -> str | None:
    """An RFC 5987 ext-value decoded, or None when it is malformed."""
    match = _EXT_VALUE.fullmatch(value)
    charset = _EXT_CHARSETS.get(match.group(1).decode().lower()) if match else None
    if match is None or charset is None:
        return None
    try:
        return unquote_to_bytes(match.group(2)).decode(charset)
    except UnicodeDecodeError:
        return None


def _ext_filename(disposition: bytes) -> str | None:
    """The disposition's `filename*`, decoded; None when absent or unreadable."""
    pos = disposition.find(b";")
    while 0 <= pos < len(disposition):
        parameter = _PARAMETER.match(disposition, pos)
        if parameter is None:
            return None
        if parameter.group(1).lower() == b"filename*":
            quoted = parameter.group(2)
            return _ext_value(quoted[1:-1] if quoted.startswith(b'"') else quoted)
        pos = parameter.end()
    return None


def _form_name(raw: bytes) -> str:
    """A part's file name with the form encoding's three escapes undone."""
    unescaped = _FORM_ESCAPE.sub(lambda m: _FORM_ESCAPES[m.group(0)], raw)
    return unescaped.decode("utf-8", "replace")


@dataclass
class _State:
    """What the parser's callbacks have seen so far."""

    header_field: bytes = b""
    header_value: bytes = b""
    disposition: bytes = b""
    in_file: bool = False
    file_seen: bool = False
    file_done: bool = False
    filename: str | None = None
    other_bytes: int = 0
    pending: list[bytes] = field(default_factory=list)

    def on_part_begin(self) -> None:
        self.disposition = b""
        self.in_file = False

    def on_header_field(self, data: bytes, start: int, end: int) -> None:
        self.header_field += data[start:end]

    def on_header_value(self, data: bytes, start: int, end: int) -> None:
        self.header_value += data[start:end]

    def on_header_end(self) -> None:
        if self.header_field.lower() == b"content-disposition":
            self.disposition = self.header_value
        self.header_field = self.header_value = b""

    def on_headers_finished(self) -> None:
        _, options = parse_options_header(self.disposition)
        name = options.get(b"name", b"").decode("utf-8", "replace")
        raw = options.get(b"filename")
        ext = _ext_filename(self.disposition)
        if name == FILE_FIELD and self.file_seen:
            raise InvalidRequest(
                "Send one file per request: the form has a second part named `file`.",
                code="invalid_upload",
            )
        if name == FILE_FIELD:
            self.in_file = self.file_seen = True
            self.filename = ext if ext is not None else _form_name(raw) if raw is not None else None
        elif raw is not None or ext is not None:
            raise InvalidRequest(
                f"The file is in a part named {name!r}; send it in a part named `file`.",
                code="invalid_upload",
            )

    def on_part_data(self, data: bytes, start: int, end: int) -> None:
        if self.in_file:
            self.pending.append(data[start:end])
            return
        self.other_bytes += end - start
        if self.other_bytes > OTHER_FIELDS_BYTES:
            raise InvalidRequest("Form fields besides `file` are too large.")

    def on_part_end(self) -> None:
        if self.in_file:
            self.file_done = True
        self.in_file = False

    def take(self) -> list[bytes]:
        chunks, self.pending = self.pending, []
        return chunks


def _parser(request: Request, state: _State) -> MultipartParser:
    kind, options = parse_options_header(request.headers.get("content-type", ""))
    boundary = options.get(b"boundary")
    if kind != b"multipart/form-data" or not boundary:
        raise InvalidRequest(
            "Send the file as multipart/form-data with a part named `file`.",
            code="invalid_upload",
        )
    callbacks = {
        "on_part_begin": state.on_part_begin,
        "on_header_field": state.on_header_field,
        "on_header_value": state.on_header_value,
        "on_header_end": state.on_header_end,
        "on_headers_finished": state.on_headers_finished,
        "on_part_data": state.on_part_data,
        "on_part_end": state.on_part_end,
    }
    return MultipartParser(boundary, callbacks)  # type: ignore[arg-type]


def _feed(parser: MultipartParser, body: bytes) -> None:
    try:
        parser.write(body)
    except MultipartParseError as exc:
        raise InvalidRequest("The multipart body is malformed.", code="invalid_upload") from exc


async def read_file_part(request: Request) -> tuple[str | None, AsyncIterator[bytes]]:
    """The file part's name, and its bytes as they arrive."""
    state = _State()
    parser = _parser(request, state)
    body = request.stream().__aiter__()
    async for chunk in body:
        _feed(parser, chunk)
        if state.file_seen:
            break
    if not state.file_seen:
        raise InvalidRequest("The form has no part named `file`.", code="invalid_upload")

    async def chunks() -> AsyncIterator[bytes]:
        for piece in state.take():
            yield piece
        async for chunk in body:
            _feed(parser, chunk)  # after the file, the rest of the form is parsed, not kept
            for piece in state.take():
                yield piece
        if not state.file_done:
            raise InvalidRequest("The upload ended before the file did.", code="invalid_upload")

    return state.filename, chunks()
