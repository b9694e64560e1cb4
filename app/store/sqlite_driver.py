"""aiosqlite with one trip to its thread per statement.

aiosqlite runs every call on its own thread, and SQLAlchemy's adapter makes four of them
per statement (open a cursor, execute, fetch the rows, close the cursor). Each trip is a
future, a queue hand-off and a wake-up of the event loop from another thread, and under
load it took a quarter of a persisted run's CPU. SQLite itself answers these statements in
microseconds, so the trips were the cost. Here one function does all four on the thread
and hands back the description, the rows, the row count and the last row id.

Nothing else changes: the same connection thread, the same transactions (sqlite3's
implicit BEGIN before a write, commit and rollback as before; a rollback with no
transaction open, which sqlite3 skips itself, skips the trip too) and the same exceptions.
Used by `app.store.db.create_engine` for every `sqlite+aiosqlite` URL; it leans on
`aiosqlite.Connection._execute` (queue a function for the thread), as SQLAlchemy's own
adapter leans on its queue.
"""

from __future__ import annotations

import collections
import sqlite3
from collections.abc import Sequence
from typing import Any

import aiosqlite
from sqlalchemy.dialects.sqlite.aiosqlite import (
    AsyncAdapt_aiosqlite_connection,
    AsyncAdapt_aiosqlite_cursor,
    AsyncAdapt_aiosqlite_dbapi,
)
from sqlalchemy.util import EMPTY_DICT
from sqlalchemy.util.concurrency import await_

# What one trip brings back: description, rows, rowcount, lastrowid.
_Outcome = tuple[Any, list[Any], int, int | None]


def _run(conn: sqlite3.Connection, many: bool, operation: str, parameters: Any) -> _Outcome:
    """On aiosqlite's thread: the whole statement, cursor closed before returning."""
    cursor = conn.cursor()
    try:
        if many:
            cursor.executemany(operation, parameters)
        elif parameters is None:
            cursor.execute(operation)
        else:
            cursor.execute(operation, parameters)
        description = cursor.description
        rows = cursor.fetchall() if description else []
        return description, rows, cursor.rowcount, cursor.lastrowid
    finally:
        cursor.close()


class OneTripCursor(AsyncAdapt_aiosqlite_cursor):
    """A buffered cursor whose statement runs in one trip to the connection's thread."""

    __slots__ = ("_description", "_lastrowid", "_rowcount")

    def __init__(self, adapt_connection: AsyncAdapt_aiosqlite_connection) -> None:
        # No aiosqlite cursor is opened here (that was a trip of its own).
        self._adapt_connection = adapt_connection
        self._connection = adapt_connection._connection
        self._cursor = None  # type: ignore[assignment]
        self._soft_closed_memoized = EMPTY_DICT
        self._rows = collections.deque()
        self._description: Any = None
        self._rowcount = -1
        self._lastrowid: int | None = None

    @property
    def description(self) -> Any:
        return self._description

    @property
    def rowcount(self) -> int:
        return self._rowcount

    @property
    def lastrowid(self) -> int:
        return self._lastrowid  # type: ignore[return-value]

    async def _async_soft_close(self) -> None:
        """Nothing to close: the statement's cursor closed on the thread."""

    def execute(self, operation: Any, parameters: Any = None) -> Any:
        return self._trip(False, operation, parameters)

    def executemany(self, operation: Any, seq_of_parameters: Sequence[Any]) -> Any:
        return self._trip(True, operation, seq_of_parameters)

    def _trip(self, many: bool, operation: str, parameters: Any) -> None:
        connection: aiosqlite.Connection = self._connection  # type: ignore[assignment]
        try:
            outcome: _Outcome = await_(
                connection._execute(  # type: ignore[no-untyped-call]
                    _run, connection._conn, many, operation, parameters
                )
            )
        except Exception as error:  # noqa: BLE001 - the adapter maps it, as SQLAlchemy's does
            self._adapt_connection._handle_exception(error)
        self._description, rows, self._rowcount, self._lastrowid = outcome
        self._rows = collections.deque(rows)


class OneTripConnection(AsyncAdapt_aiosqlite_connection):
    __slots__ = ()
    _cursor_cls = OneTripCursor  # type: ignore[assignment]

    def rollback(self) -> None:
        """No trip when there is nothing to roll back. The pool rolls back every
        connection it takes back, after a commit and after a read alike (five times a
        conversation run), and sqlite3 does nothing then; whether a transaction is open is
        the SQLite handle's flag, read here as sqlite3 reads it, while no statement of
        this connection is under way."""
        raw: sqlite3.Connection | None = self._connection._connection
        if raw is not None and not raw.in_transaction:
            return
        super().rollback()


class OneTripDbapi(AsyncAdapt_aiosqlite_dbapi):
    """The aiosqlite DBAPI adapter whose connections use `OneTripCursor`."""

    def connect(self, *arg: Any, **kw: Any) -> OneTripConnection:
        adapted = super().connect(*arg, **kw)
        return OneTripConnection(self, adapted._connection)


def one_trip_dbapi() -> OneTripDbapi | None:
    """The `module` to hand `create_async_engine` for a `sqlite+aiosqlite` URL; None (the
    stock adapter, four trips a statement) if an aiosqlite release lacks the private queue
    call this leans on, so an upgrade costs speed and nothing else."""
    if not callable(getattr(aiosqlite.Connection, "_execute", None)):
        return None
    return OneTripDbapi(aiosqlite, sqlite3)
