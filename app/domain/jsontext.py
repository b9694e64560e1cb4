"""JSON text read as JSON (RFC 8259), not as Python's superset of it.

`json.loads` also takes `NaN`, `Infinity` and `-Infinity`. Postgres JSONB refuses them,
no JSON encoder may write them back (a browser's `JSON.parse` fails on them), and SQLite's
JSON turns them into something else, so a value holding one was a 500 at the run's write or
came back changed on reload. Everywhere JSON text enters the service (a request body, a
model's tool arguments, a tool message or function_call_output a client sends) it is read
by `loads`, which refuses them as the parse error they are: a body is `invalid_json`, tool
arguments are "not valid JSON" on the tool card, a tool output stays the text it was.
"""

from __future__ import annotations

import json
from typing import Any


def _refuse_constant(name: str) -> Any:
    # The parser gives no position here; callers only need the error's type.
    raise json.JSONDecodeError(f"{name} is not valid JSON", name, 0)


# Stateless; built once because `json.loads` with an option builds a decoder per call.
_DECODER = json.JSONDecoder(parse_constant=_refuse_constant)


def loads(text: str | bytes) -> Any:
    """`json.loads(text)` (bytes in UTF-8, -16 or -32, as Starlette reads a body) that
    raises `json.JSONDecodeError` on the constants that are not JSON."""
    if isinstance(text, bytes):
        text = text.decode(json.detect_encoding(text), "surrogatepass")
    return _DECODER.decode(text)
