"""Who is told of the statements a turn sends on the driver's own connection.

SQLAlchemy's `before_cursor_execute` and `commit` events tell of what goes through it;
the turn's database work that goes to the driver directly (`sqlite_turns`, `pg_turns`)
tells the function in its pooled connection's `info` under `OBSERVE`, if one is there:
each statement's SQL (whether an `executemany`), and BEGIN and COMMIT. The bench and
the statement budget put one there on checkout, so their counts stay whole.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Observe = Callable[[str, bool], None]

OBSERVE = "observe"


def observer(pooled: Any) -> Observe | None:
    """The observer of a pooled connection (its `info`), if any."""
    found: Observe | None = pooled.info.get(OBSERVE)
    return found
