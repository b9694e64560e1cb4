"""A Postgres connection lost under a statement is the database being out of reach, not
a bug: the request answers 503 `database_unavailable` with Retry-After, and the
connection leaves the pool.

A restarted or failed-over Postgres, `pg_terminate_backend` or a dropped network path
ends the backends under the statements running on them. Without this, each of those
requests answered 500 `internal_error` (logged as an unhandled error), though retrying a
moment later works: the pool connects afresh. Two ways statements reach Postgres, so two
hooks: SQLAlchemy's `handle_error` for sessions and engine connections (`watch`), and
`lost` for the turn path's own asyncpg calls (`app.store.pg_turns`).
"""

from __future__ import annotations

from typing import Any

import asyncpg  # type: ignore[import-untyped]
from sqlalchemy import event
from sqlalchemy.engine import ExceptionContext
from sqlalchemy.ext.asyncio import AsyncEngine

from app.domain.errors import Unavailable

# What asyncpg raises when the backend under a statement went away: the socket closed
# (InterfaceError: ConnectionDoesNotExistError, ...), an administrator or a crash ended
# the backend, the server is starting up, or the connection's protocol was left mid-
# operation by one of those (InternalClientError: "cannot switch to state").
_LOST = (
    asyncpg.InterfaceError,
    asyncpg.InternalClientError,
    asyncpg.PostgresConnectionError,
    asyncpg.AdminShutdownError,
    asyncpg.CrashShutdownError,
    asyncpg.CannotConnectNowError,
    OSError,
)
RETRY_AFTER_SECONDS = 1.0


def lost(error: BaseException) -> bool:
    """Whether `error` (asyncpg's, or a DBAPI error translated from one) is a lost
    connection."""
    return isinstance(error, _LOST) or isinstance(error.__cause__, _LOST)


def unavailable() -> Unavailable:
    return Unavailable(
        "The database is out of reach for a moment; try again shortly.",
        code="database_unavailable",
        retry_after=RETRY_AFTER_SECONDS,
    )


def watch(engine: AsyncEngine) -> None:
    """Turn lost connections under `engine`'s statements into `unavailable()`."""
    event.listen(engine.sync_engine, "handle_error", _on_error, retval=True)


def _on_error(context: ExceptionContext) -> Any:
    if context.is_pre_ping:
        return None
    error = context.original_exception
    if not (context.is_disconnect or lost(error)):
        return None
    context.is_disconnect = True  # the connection leaves the pool, not back into it
    return unavailable()
