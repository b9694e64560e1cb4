"""The instant a keyset cursor names, read from text a client may have forged.

A cursor is opaque, but it comes back from the client: a timestamp at the calendar's edge
(`0001-01-01T00:00:00+14:00` is year 0 in UTC) overflows when the database driver turns it
into UTC, and an id with a NUL or a lone surrogate is a value no column can be compared
with. Each was a 500; `cursor_instant` and `cursor_id` make them the caller's 400.
"""

from __future__ import annotations

from datetime import UTC, datetime

from app.domain.text import valid_text


def cursor_instant(text: str) -> datetime:
    """The aware UTC instant `text` (ISO 8601 with an offset) names; ValueError when it
    names none that a database can hold."""
    at = datetime.fromisoformat(text)
    if at.tzinfo is None:
        raise ValueError("a cursor's instant has an offset")
    try:
        return at.astimezone(UTC)
    except OverflowError as exc:
        raise ValueError("a cursor's instant is outside the calendar") from exc


def cursor_id(value: object) -> str:
    """`value` as an id a cursor may carry; ValueError when it is not valid text."""
    if not isinstance(value, str) or not value or valid_text(value) != value:
        raise ValueError("a cursor's id is not valid text")
    return value
