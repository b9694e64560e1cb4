"""A conversation turn's database work on SQLite, each unit in one trip to aiosqlite's thread.

A persisted run's first read (its conversation), its start (the claim with the user
message, the run's row, its feed entry, the history), its event batches and its end (the
last events, the answer that lets the conversation go, the run's state and usage rows)
are the statements the repositories send for `RunJournal`, in the same transactions;
here each unit's statements and its COMMIT run as one function on the connection's
thread (`Prepared` keeps SQLAlchemy's SQL and its processing of values). Through
SQLAlchemy, a unit's session cost about as much CPU as SQLite's work for the whole run,
and each statement a few hundred microseconds more (its execution, a greenlet switch and
a trip to the thread).

Only the plain case is done here: a unit that finds something else (the conversation
held or gone, a message id taken, the run gone) rolls back and answers None, and the
journal does the unit again through the repositories, which say what it was. Each
statement is told to the pooled connection's observer (`app.store.observe`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from functools import cache
from typing import Any, TypeVar

from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlalchemy.util.concurrency import greenlet_spawn

from app.domain.events import SequencedEvent
from app.domain.messages import Message
from app.store.observe import Observe, observer
from app.store.prepared import Prepared
from app.store.records import ConversationRecord
from app.store.repos.conversations import conversation_not_found, to_record
from app.store.repos.events import driver_batch
from app.store.repos.message_values import AppendValues
from app.store.repos.messages import core_record
from app.store.repos.turn_statements import (
    CONVERSATION,
    HISTORY,
    INSERT_FEED_ENTRY,
    INSERT_MESSAGE,
    INSERT_RUN,
    INSERT_USAGE,
    UPDATE_RUN,
    RunClose,
    RunStart,
    bump_conversation,
)

T = TypeVar("T")
Work = Callable[["_Statements"], T]


class _Undo(Exception):
    """The unit found something other than the plain case: roll it back."""


class _Statements:
    """On the thread: runs prepared statements on the raw connection, telling each to the
    observer."""

    def __init__(self, conn: sqlite3.Connection, observe: Observe | None) -> None:
        self._conn = conn
        self._observe = observe

    def run(self, prepared: Prepared, values: dict[str, Any]) -> list[Any]:
        """The statement's rows, all of them (a statement left unread stays open)."""
        return self._cursor(prepared, values).fetchall()

    def row(self, prepared: Prepared, values: dict[str, Any]) -> Any:
        rows = self.run(prepared, values)
        return rows[0] if rows else None

    def count(self, prepared: Prepared, values: dict[str, Any]) -> int:
        """How many rows the statement changed."""
        cursor = self._cursor(prepared, values)
        cursor.fetchall()
        return cursor.rowcount

    def _cursor(self, prepared: Prepared, values: dict[str, Any]) -> sqlite3.Cursor:
        if self._observe is not None:
            self._observe(prepared.sql, False)
        return self._conn.execute(prepared.sql, prepared.params(values))

    def many(self, sql: str, rows: Sequence[Any]) -> None:
        if self._observe is not None:
            self._observe(sql, True)
        self._conn.executemany(sql, rows)

    def one(self, sql: str, row: Sequence[Any]) -> None:
        """A driver-level statement of one row (an event batch's)."""
        if self._observe is not None:
            self._observe(sql, False)
        self._conn.execute(sql, row)


def _unit(work: Work[T], conn: sqlite3.Connection, observe: Observe | None) -> T | None:
    """On the thread: `work` in one transaction, committed unless it raised."""
    try:
        done = work(_Statements(conn, observe))
    except _Undo:
        conn.rollback()
        return None
    except BaseException:
        conn.rollback()
        raise
    if conn.in_transaction:
        if observe is not None:
            observe("COMMIT", False)
        conn.commit()
    return done


class SqliteTurns:
    def __init__(self, engine: AsyncEngine) -> None:
        self._engine = engine
        dialect = engine.dialect
        self._dialect = dialect

        @cache
        def prepared(statement: Any, keys: tuple[str, ...] = ()) -> Prepared:
            return Prepared(statement, dialect, keys)

        self._prepared = prepared

    async def conversation(self, owner_id: str, conversation_id: str) -> ConversationRecord:
        """The owner's conversation (`ConversationRepo.get`): NotFound when it is not."""
        read = self._prepared(CONVERSATION)
        given = {"p_cid": conversation_id, "p_owner": owner_id}
        rows = await self._trip(lambda sql: sql.run(read, given))
        if not rows:
            raise conversation_not_found()
        return to_record(read.named(rows[0]))

    async def start(self, values: AppendValues, starting: RunStart) -> list[Message] | None:
        """Claim the conversation with the user message (`values`, for `p_claim`), write
        the run's row and feed entry and read the history; None (nothing written) when the
        claim or the message id is not free."""
        bump = self._prepared(bump_conversation(**values.options))
        message = self._prepared(INSERT_MESSAGE, (*values.row, "position"))
        run = self._prepared(INSERT_RUN, tuple(starting.row))
        feed = self._prepared(INSERT_FEED_ENTRY)
        history = self._prepared(HISTORY)
        params = values.params

        def work(sql: _Statements) -> list[Any]:
            found = sql.row(bump, params)
            if found is None or found[1]:
                raise _Undo
            sql.run(message, values.row | {"position": found[0] - 1})
            sql.run(run, starting.row)
            sql.run(feed, starting.feed | params)
            return sql.run(history, params)

        rows = await self._trip(work)
        if rows is None:
            return None
        return [core_record(history.named(r)).message for r in rows]

    async def events(self, run_id: str, events: list[SequencedEvent]) -> None:
        """An event batch, committed."""
        batch, row = driver_batch(self._dialect, run_id, events)
        await self._trip(lambda sql: sql.one(batch, row))

    async def end(
        self,
        values: AppendValues,
        closing: RunClose,
        run_id: str,
        events: list[SequencedEvent],
    ) -> bool:
        """The run's last events, its answer (`values`, for `p_release`), its state and
        usage rows; False (nothing written) when the answer's id is taken, or the
        conversation or the run is gone."""
        bump = self._prepared(bump_conversation(**values.options))
        message = self._prepared(INSERT_MESSAGE, (*values.row, "position"))
        ended = self._prepared(UPDATE_RUN, ("p_run", *closing.run))
        usage = self._prepared(INSERT_USAGE, tuple(closing.usage[0])) if closing.usage else None
        batch = driver_batch(self._dialect, run_id, events) if events else None
        params = values.params

        def work(sql: _Statements) -> bool:
            if batch is not None:
                sql.one(*batch)
            found = sql.row(bump, params)
            if found is None or found[1]:
                raise _Undo
            if sql.count(ended, closing.run | {"p_run": run_id}) == 0:
                raise _Undo
            if usage is not None:
                sql.many(usage.sql, [usage.params(r) for r in closing.usage])
            sql.run(message, values.row | {"position": found[0] - 1})
            return True

        return bool(await self._trip(work))

    async def _trip(self, work: Work[T]) -> T | None:
        raw = await self._engine.raw_connection()
        try:
            driver = raw.driver_connection
            observe = observer(raw)
            try:
                return await driver._execute(_unit, work, driver._conn, observe)  # type: ignore[no-any-return, union-attr]
            except sqlite3.Error as error:
                raise DBAPIError.instance(None, None, error, sqlite3.Error) from error
        finally:
            await greenlet_spawn(raw.close)
