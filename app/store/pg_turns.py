"""A conversation turn's database work on Postgres, on asyncpg's own connection.

The same statements as the repositories send for `RunJournal` (the conversation's read,
the claim's statement and the history, event batches, the end's batch and statement),
in the same transactions (the start, and the end with events: one statement each, atomic
by itself, one round trip instead of four), without SQLAlchemy's execution around each:
a unit's session and each statement's execution and greenlet switch cost more CPU than
asyncpg's own work for them. `Prepared` keeps SQLAlchemy's SQL and its processing of
values; the pooled connection keeps the codecs SQLAlchemy set on it (JSON, JSONB).

Only the plain case is done here, as on SQLite (`sqlite_turns`): a unit that finds
anything else rolls back and answers None, and the journal does it again through the
repositories. Each statement is told to the pooled connection's observer
(`app.store.observe`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import cache
from typing import Any

import asyncpg  # type: ignore[import-untyped]
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlalchemy.util.concurrency import greenlet_spawn

from app.domain.events import SequencedEvent
from app.domain.messages import Message
from app.store.lost_connection import database_unavailable, reported_unavailable
from app.store.observe import Observe, observer
from app.store.prepared import Prepared
from app.store.records import ConversationRecord
from app.store.repos.conversations import conversation_not_found, to_record
from app.store.repos.events import batch_params, driver_batch
from app.store.repos.message_values import AppendValues
from app.store.repos.messages import core_record
from app.store.repos.turn_statements import (
    CONVERSATION,
    RunClose,
    RunStart,
    append_message,
    together_params,
)


class _Undo(Exception):
    """The unit found something other than the plain case: roll it back."""


class _Connection:
    def __init__(self, conn: asyncpg.Connection, observe: Observe | None) -> None:
        self._conn = conn
        self._observe = observe

    async def row(self, prepared: Prepared, values: dict[str, Any]) -> Any:
        self._told(prepared.sql)
        return await self._conn.fetchrow(prepared.sql, *prepared.params(values))

    async def rows(self, prepared: Prepared, values: dict[str, Any]) -> list[Any]:
        self._told(prepared.sql)
        found: list[Any] = await self._conn.fetch(prepared.sql, *prepared.params(values))
        return found

    async def execute(self, sql: str, parameters: Any) -> None:
        self._told(sql)
        await self._conn.execute(sql, *parameters)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[None]:
        """Commits unless the block raised; `_Undo` rolls back and is swallowed."""
        self._told("BEGIN")
        transaction = self._conn.transaction()
        await transaction.start()
        try:
            yield
        except BaseException:
            await transaction.rollback()
            raise
        self._told("COMMIT")
        await transaction.commit()

    def _told(self, sql: str) -> None:
        if self._observe is not None:
            self._observe(sql, False)


class PostgresTurns:
    def __init__(self, engine: AsyncEngine) -> None:
        self._engine = engine
        dialect = engine.dialect
        self._dialect = dialect

        @cache
        def prepared(statement: Any) -> Prepared:
            return Prepared(statement, dialect)

        self._prepared = prepared

    async def conversation(self, owner_id: str, conversation_id: str) -> ConversationRecord:
        """The owner's conversation (`ConversationRepo.get`): NotFound when it is not."""
        read = self._prepared(CONVERSATION)
        async with self._connection() as conn:
            row = await conn.row(read, {"p_cid": conversation_id, "p_owner": owner_id})
        if row is None:
            raise conversation_not_found()
        return to_record(read.named(row))

    async def start(self, values: AppendValues, starting: RunStart) -> list[Message] | None:
        """`SqliteTurns.start`: the claim's statement, which writes the user message, the
        run's row and its feed entry along and returns the history (`append_message`'s
        `whole`): one statement and one round trip, where BEGIN, the claim, the history's
        read and COMMIT were four. None when the claim found anything but the plain case
        (the statement wrote nothing, or undid itself)."""
        claim = self._prepared(append_message(**values.options, start_run=True, whole=True))
        async with self._connection() as conn:
            try:
                rows = await conn.rows(claim, together_params(values, starting))
            except asyncpg.DivisionByZeroError:
                return None  # the id taken or the feed entry not in: nothing stays
        if not rows:
            return None
        return [core_record(claim.named(r)).message for r in rows]

    async def events(self, run_id: str, events: list[SequencedEvent]) -> None:
        """An event batch: one statement, atomic by itself (no transaction around it)."""
        sql, parameters = driver_batch(self._dialect, run_id, events)
        async with self._connection() as conn:
            await conn.execute(sql, parameters)

    async def end(
        self, values: AppendValues, closing: RunClose, run_id: str, events: list[SequencedEvent]
    ) -> bool:
        """`SqliteTurns.end`: the last events and the answer's statement, which writes the
        run's end and usage rows along (`append_message`). With events, one statement and
        one round trip (`append_message`'s `whole`): BEGIN, the batch's INSERT and COMMIT
        were three more, and each trip the loop sleeps on costs a run CPU after it."""
        if events:
            return await self._end_whole(values, closing, run_id, events)
        answer = self._prepared(append_message(**values.options, close_run=True))
        params = together_params(values, closing=closing)
        try:
            async with self._connection() as conn, conn.transaction():
                if events:
                    await conn.execute(*driver_batch(self._dialect, run_id, events))
                found = await conn.row(answer, params)
                if found is None or found[1] == 0 or found[2] == 0:
                    raise _Undo
        except _Undo:
            return False
        return True

    async def _end_whole(
        self, values: AppendValues, closing: RunClose, run_id: str, events: list[SequencedEvent]
    ) -> bool:
        answer = self._prepared(append_message(**values.options, close_run=True, whole=True))
        params = together_params(values, closing=closing)
        params.update(batch_params(run_id, events))
        async with self._connection() as conn:
            try:
                found = await conn.row(answer, params)
            except asyncpg.DivisionByZeroError:
                return False  # the id taken or the run gone: the statement undid itself
        return found is not None

    @asynccontextmanager
    async def _connection(self) -> AsyncIterator[_Connection]:
        with reported_unavailable():
            raw = await self._engine.raw_connection()
            driver = raw.driver_connection
            try:
                yield _Connection(driver, observer(raw))
            except (asyncpg.PostgresError, asyncpg.InterfaceError) as error:
                if driver is not None and driver.is_closed():  # SQLAlchemy's test of its end
                    raise database_unavailable() from error
                if not isinstance(error, asyncpg.PostgresError):
                    raise
                raise DBAPIError.instance(
                    None, None, error, asyncpg.PostgresError, dialect=self._dialect
                ) from error
            finally:
                await greenlet_spawn(raw.close)
