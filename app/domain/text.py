"""Text enters the service valid, once, at its edges.

Python strings may hold what no UTF-8 encoder, browser or Postgres accepts: a lone UTF-16
surrogate (`"\\ud800"` as a JSON escape, or half an emoji pair a provider split across
two deltas) and NUL (Postgres text and JSONB cannot store U+0000). Either would make an
encoder raise mid-stream or the database refuse a run's final write. Provider deltas,
user input, token claims and tool results pass through these functions where they enter,
so what is streamed, what is stored and what a reload shows are the same.

    valid_text(s)       lone surrogates and NUL -> U+FFFD; valid pairs rejoined
    valid_json(value)   the same for every string (keys too) inside JSON-shaped data
    json_text_valid(t)  whether every string JSON text `t` holds is valid already
    SurrogateJoiner     a streamed text's deltas: a high surrogate at the end of one delta
                        waits for the low surrogate that may start the next
"""

from __future__ import annotations

import re
from typing import Any

REPLACEMENT = "\ufffd"

# A surrogate pair (kept, then joined), a lone surrogate or NUL (replaced).
_SUSPECT = re.compile("[\ud800-\udbff][\udc00-\udfff]|[\ud800-\udfff\x00]")


def _fix(match: re.Match[str]) -> str:
    found = match.group(0)
    if len(found) == 2:
        return found.encode("utf-16", "surrogatepass").decode("utf-16")
    return REPLACEMENT


def valid_text(text: str) -> str:
    """`text` with lone surrogates and NUL replaced by U+FFFD (pairs become their
    character). Returns `text` itself when nothing needed fixing (the common case costs
    one regex scan)."""
    if _SUSPECT.search(text) is None:
        return text
    return _SUSPECT.sub(_fix, text)


def valid_json(value: Any) -> Any:
    """JSON-shaped data with every string made valid; other values pass unchanged."""
    if isinstance(value, str):
        return valid_text(value)
    if isinstance(value, dict):
        return {valid_text(k) if isinstance(k, str) else k: valid_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [valid_json(v) for v in value]
    return value


def json_text_valid(text: str) -> bool:
    """Whether every string parsed from JSON `text` is valid as it stands (then `valid_json`
    of it changes nothing): a lone surrogate or NUL gets into one only as itself in the text
    (a parser refuses a raw NUL inside a string) or through a `\\u` escape. One scan in C
    instead of a walk over every value."""
    return "\\u" not in text and _SUSPECT.search(text) is None


def _is_high(char: str) -> bool:
    return "\ud800" <= char <= "\udbff"


class SurrogateJoiner:
    """Deltas of one streamed text, made valid without breaking a pair split in two.

    A delta ending in a high surrogate keeps it back; the next delta either starts with
    its low half (the pair is rejoined into one character) or does not (the kept half
    becomes U+FFFD). `flush()` at the end of the text gives back anything still kept.
    """

    def __init__(self) -> None:
        self._held = ""

    def feed(self, delta: str) -> str:
        text = self._held + delta
        self._held = ""
        if text and _is_high(text[-1]):
            self._held, text = text[-1], text[:-1]
        return valid_text(text)

    def flush(self) -> str:
        held, self._held = self._held, ""
        return REPLACEMENT if held else ""
