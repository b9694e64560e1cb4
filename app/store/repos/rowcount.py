"""How many rows a conditional UPDATE or DELETE touched: how repositories learn whether
this caller won a claim. (SQLAlchemy types `rowcount` only on `CursorResult`.)"""

from __future__ import annotations

from typing import Any


def rowcount(result: Any) -> int:
    count: int = result.rowcount
    return count
