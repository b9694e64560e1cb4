"""The media type of a `data:` URL, read the one way for both OpenAI input formats.

Chat Completions and Responses clients both inline attachments as data URLs
(`image_url.url`, `file_data`); the type they name becomes the file part's `mimeType`.
`file_data` may also come as bare base64, and is then wrapped as a data URL.
"""

from __future__ import annotations

import re
from typing import Any

# A JSON string that is a data URL, or bare base64 of a size only a file's bytes take.
# JSON may write `/` as `\/` (PHP's json_encode does by default), and base64 is full of it;
# an escaped quote, which no file's text holds, ends the match early (counts less).
_INLINE_FILE = re.compile(r'"(?:data:[^"]*|[A-Za-z0-9+/\\]{1024,}={0,2})"')


def data_url_mime(url: Any) -> str | None:
    """The media type of a `data:` URL (`data:image/png;base64,...` -> `image/png`).

    None for anything else, and for a data URL that names no type (`data:,hello`).
    """
    if not isinstance(url, str) or not url.startswith("data:"):
        return None
    header = url[5:].split(",", 1)[0]
    mime = header.split(";", 1)[0]
    return mime or None


def file_data_url(data: Any) -> str | None:
    """`file_data` as a data URL: OpenAI documents it as base64 and clients send it both
    ways, bare (`JVBERi0...`) or as a data URL (`data:application/pdf;base64,JVBERi0...`).
    Bare base64 is wrapped (its type is decided later from the bytes); None when absent."""
    if not isinstance(data, str):
        return None
    if data.startswith("data:"):
        return data
    return f"data:application/octet-stream;base64,{data}"


def inline_file_chars(json_text: str) -> int:
    """How much of a JSON body is files sent inline (data URLs, bare base64 `file_data`):
    one scan in C, so a body may be measured before anything walks its values."""
    return sum(m.end() - m.start() for m in _INLINE_FILE.finditer(json_text))
