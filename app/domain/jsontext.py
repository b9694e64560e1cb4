"""JSON text read as JSON (RFC 8259), not as Python's superset of it.

`json.loads` also takes `NaN`, `Infinity` and `-Infinity`. Postgres JSONB refuses them,
no JSON encoder may write them back (a browser's `JSON.parse` fails on them), and SQLite's
JSON turns them into something else, so a value holding one was a 500 at the run's write or
came back changed on reload. Everywhere JSON text enters the service (a request body, a
model's tool arguments, a tool message or function_call_output a client sends) it is read
by `loads`, which refuses them as the parse error they are: a body is `invalid_json`, tool
arguments are "not valid JSON" on the tool card, a tool output stays the text it was.
A number too large for a float (`1e999`, or four hundred digits before a `.5`) is the
same infinity spelled as a number: Python's parser made it `inf` silently (a 500 at the
Postgres write, `null` on reload from SQLite), so it is refused the same way.

`depth` measures how deeply a value nests: pydantic refuses to encode more than 255 levels
and Python's recursion gives out near 1,000, so a request body nested a few hundred levels
deep (a client tool's schema) was accepted and then failed its run with an internal error.
A request body is refused past `MAX_DEPTH` levels; JSON text carried inside a value (a tool
call's arguments, a tool's output, which the body's depth does not count) is read by
`loads_value`, which refuses the same depth, and an integer of more digits than Python
converts, as the parse errors they are: they were a 500 (a recursion error at a thousand
levels, an encoder's refusal past 255) or a stream that never ended.
"""

from __future__ import annotations

import json
import math
from typing import Any

MAX_DEPTH = 100  # how deeply a request body, or JSON text inside one, may nest
TOO_DEEP = f"it nests deeper than {MAX_DEPTH} levels"


def _refuse_constant(name: str) -> Any:
    # The parser gives no position here; callers only need the error's type.
    raise json.JSONDecodeError(f"{name} is not valid JSON", name, 0)


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise json.JSONDecodeError(f"{text[:20]} is too large for a number", text, 0)
    return value


# Stateless; built once because `json.loads` with an option builds a decoder per call.
_DECODER = json.JSONDecoder(parse_constant=_refuse_constant, parse_float=_finite_float)


def decode(data: bytes) -> str:
    """JSON text from bytes in UTF-8, -16 or -32, as `json.loads` and Starlette read a body."""
    return data.decode(json.detect_encoding(data), "surrogatepass")


def loads(text: str | bytes) -> Any:
    """`json.loads(text)` that raises `json.JSONDecodeError` on the constants that are not
    JSON."""
    if isinstance(text, bytes):
        text = decode(text)
    return _DECODER.decode(text)


def loads_value(text: str) -> Any:
    """`loads` for JSON text inside a value (see the module doc): also raises
    `json.JSONDecodeError` for text nested deeper than `MAX_DEPTH` or holding an integer
    of more digits than Python converts."""
    try:
        value = loads(text)
    except json.JSONDecodeError:
        raise
    except RecursionError:
        raise json.JSONDecodeError(TOO_DEEP, text, 0) from None
    except ValueError:  # an integer of more digits than Python converts (4,300)
        raise json.JSONDecodeError("a number has too many digits", text, 0) from None
    if may_nest_deeper(text, MAX_DEPTH) and depth(value) > MAX_DEPTH:
        raise json.JSONDecodeError(TOO_DEEP, text, 0)
    return value


def may_nest_deeper(text: str, levels: int) -> bool:
    """Whether JSON `text` may nest deeper than `levels`: each level opens with a bracket or
    a brace, so a text holding no more than `levels` of them cannot (two scans in C, where
    `depth` walks every value of a request body in Python)."""
    return text.count("[") + text.count("{") > levels


def depth(value: Any) -> int:
    """How many arrays and objects nest in `value` at its deepest (0 for a scalar);
    iterative, so any depth the parser took can be measured."""
    if not isinstance(value, dict | list):
        return 0
    deepest, pending = 0, [(value, 1)]
    while pending:
        item, level = pending.pop()
        deepest = max(deepest, level)
        children = item.values() if isinstance(item, dict) else item
        pending.extend((child, level + 1) for child in children if isinstance(child, dict | list))
    return deepest
