"""A database that ended a connection under a statement, or refuses new ones, is out of
reach for a moment, not a bug: `reported_unavailable()` turns those errors into
`Unavailable` (503 `database_unavailable` with Retry-After) at the store's edge.

    what went wrong                                   seen as
    Postgres ended the backend (restart, failover,    DBAPIError with connection_invalidated
      pg_terminate_backend, crash) under a session    (SQLAlchemy's own verdict)
    ... under the turn path's own asyncpg calls       the driver connection is closed
    the server is starting, shutting down, full       SQLSTATE 08xxx but 08P01, 57P01-03,
                                                      57P05, 53300
    nothing listens / the network drops the connect   ConnectFailed (an OSError opening a
                                                      connection, `marking_connect_failures`)

Only an `Exception` is translated, never a `BaseException`: a task cancelled during a
statement must stay cancelled. SQLAlchemy counts a cancellation under a statement as a
disconnect too (it cannot tell what the connection is left with), so an earlier hook on
its `handle_error` event turned cancellations into `Unavailable`; a background loop that
catches `Exception` then never ended and shut-downs hung. Nothing here hooks SQLAlchemy's
statements: its own disconnect handling (the connection invalidated, the pool renewed)
runs as before, and the error is only renamed once it reaches the unit's edge.

An OSError is the database's only when it was raised opening a connection: the driver
raises a bare one there (refused, unreachable, timed out), but a unit's own file or socket
error is an OSError too and must stay what it is. The engine opens its connections
through `marking_connect_failures` (SQLAlchemy's documented `do_connect` event), which
raises such an error again as `ConnectFailed`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy.exc import DBAPIError

from app.domain.errors import Unavailable

RETRY_AFTER_SECONDS = 1.0

# SQLSTATEs of a connection lost or refused: class 08 (connection exception), the server
# shutting down (57P01 admin, 57P02 crash), starting up (57P03), an idle session ended
# (57P05), and no connection slot left (53300). Not 08P01 (protocol violation): Postgres
# answers a bind message that does not match its statement, or a malformed one, with it
# as an ERROR on a connection that goes on, a bug to report as one; when the server did
# end the connection, the closed connection says so (`connection_invalidated`).
_LOST_STATES = frozenset({"57P01", "57P02", "57P03", "57P05", "53300"})
_NOT_LOST_STATES = frozenset({"08P01"})


class ConnectFailed(OSError):
    """The database could not be connected to; the driver's OSError is the `__cause__`."""


def marking_connect_failures(dialect: Any, _record: Any, cargs: Any, cparams: Any) -> Any:
    """A `do_connect` listener: the connection the engine opens, with an OSError raised
    while opening it raised again as `ConnectFailed` (its errno and message kept)."""
    try:
        return dialect.connect(*cargs, **cparams)
    except ConnectFailed:
        raise
    except OSError as error:
        raise ConnectFailed(*error.args) from error


def database_unavailable() -> Unavailable:
    return Unavailable(
        "The database is out of reach for a moment; try again shortly.",
        code="database_unavailable",
        retry_after=RETRY_AFTER_SECONDS,
    )


@contextmanager
def reported_unavailable() -> Iterator[None]:
    """Raise `database_unavailable()` from a lost or refused connection inside the block."""
    try:
        yield
    except Exception as error:  # a BaseException (a cancellation) passes as it is
        if lost(error):
            raise database_unavailable() from error
        raise


def lost(error: Exception) -> bool:
    """Whether `error` says the connection was lost or could not be opened."""
    return any(_says_lost(cause) for cause in _causes(error))


def _says_lost(error: BaseException) -> bool:
    if isinstance(error, ConnectFailed):
        return True
    if isinstance(error, DBAPIError) and error.connection_invalidated:
        return True
    state = getattr(error, "sqlstate", None)
    if not isinstance(state, str) or state in _NOT_LOST_STATES:
        return False
    return state.startswith("08") or state in _LOST_STATES


def _causes(error: BaseException) -> Iterator[BaseException]:
    """`error`, then what it was raised from (a DBAPIError's driver error and its own)."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        orig = current.orig if isinstance(current, DBAPIError) else None
        current = orig if isinstance(orig, BaseException) else current.__cause__
