"""Engine and session factories, and the declarative base every table derives from."""

from __future__ import annotations

import json
import logging
import re
import time
from typing import Any

from sqlalchemy import MetaData, event, text
from sqlalchemy.engine import Engine
from sqlalchemy.exc import InvalidatePoolError, SQLAlchemyError
from sqlalchemy.ext.asyncio import (
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)
from sqlalchemy.orm import DeclarativeBase

from app.store.lost_connection import marking_connect_failures
from app.store.sqlite_driver import one_trip_dbapi

log = logging.getLogger("chat_bff.store")

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


# SQLite's page cache for the one connection, in KiB (its default is 2,000). The cache
# fills with the pages a burst of runs writes (their usage rows) and keeps them for the
# life of the process: after 5,000 streams closed SQLite held 2.5 MB against 0.77 MB
# before them (`sqlite3_memory_used`, `bench.memory --probe DIR`). The pages a run reads
# and writes are the tables' and indexes' last leaves and inner nodes, a few dozen; a page
# not cached is read again from the operating system's file cache.
SQLITE_CACHE_KIB = 512


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.execute(f"PRAGMA cache_size=-{SQLITE_CACHE_KIB}")
    cursor.close()


def _unicode_lower(value: object) -> object:
    return value.lower() if isinstance(value, str) else value


def _sqlite_functions(dbapi_connection: Any, _record: Any) -> None:
    """SQLite's own lower() folds ASCII alone, so a case-insensitive match (a conversation
    search's `q`, the example graph's names) missed "Über" for "über" where Postgres found
    it: lower() is Python's instead, Unicode-wide like Postgres'."""
    dbapi_connection.create_function("lower", 1, _unicode_lower, deterministic=True)


# A NUL escape not preceded by an escaped backslash, i.e. a real U+0000 in a string.
_NUL_IN_JSON = re.compile(r"(?<!\\)((?:\\\\)*)\\u0000")


def json_serializer(value: Any) -> str:
    """JSON for JSON columns, with U+0000 replaced by U+FFFD.

    Postgres JSONB (and text) cannot store U+0000; a model that emits one must not make
    its answer unstorable. SQLite would keep it, but both databases keep the same data.
    """
    text = json.dumps(value)
    # The substitution scans every position of the text (a look-behind at each): an
    # answer's content is kilobytes, and almost never holds a NUL to replace.
    if "\\u0000" not in text:
        return text
    return _NUL_IN_JSON.sub(r"\1\\ufffd", text)


def create_engine(url: str) -> AsyncEngine:
    """An async engine for SQLite (aiosqlite) or Postgres (asyncpg)."""
    if url.startswith("sqlite"):
        # One connection: SQLite has one writer anyway, and a transaction that reads then
        # writes can fail at once with "database is locked" when another connection holds
        # the write lock (no busy wait helps there). With one pooled connection, sessions
        # queue in the event loop instead. Nothing may hold a session while opening another.
        engine = create_async_engine(
            url,
            # One trip to aiosqlite's thread per statement instead of four.
            module=one_trip_dbapi() if url.startswith("sqlite+aiosqlite") else None,
            connect_args={"timeout": 30},
            json_serializer=json_serializer,
            pool_size=1,
            max_overflow=0,
            pool_timeout=60,
        )
        sync_engine: Engine = engine.sync_engine
        event.listen(sync_engine, "do_connect", marking_connect_failures)
        event.listen(sync_engine, "connect", _sqlite_pragmas)
        event.listen(sync_engine, "connect", _sqlite_functions)
        return engine
    engine = create_async_engine(
        url,
        # Up to 30 connections, as before (10 and 20 more on demand), but those opened in a
        # burst are kept: an overflow connection was closed when handed back while ten sat
        # idle, so 20 conversation runs at once opened one about every second run (about
        # 3 ms of CPU each, and every statement prepared again on it).
        pool_size=POOL_SIZE,
        max_overflow=0,
        json_serializer=json_serializer,
    )
    event.listen(engine.sync_engine, "do_connect", marking_connect_failures)
    event.listen(engine.sync_engine, "checkin", _idle_since)
    event.listen(engine.sync_engine, "checkout", _alive_on_checkout)
    return engine


# Postgres connections a process holds at most, kept once opened.
POOL_SIZE = 30

# A pooled connection idle this long is pinged before it is handed out (a firewall or a
# proxy may have dropped it without a word); one in steady use is not.
PING_AFTER_IDLE_S = 10.0


def _idle_since(_dbapi_connection: Any, record: Any) -> None:
    record.info["idle_since"] = time.monotonic()


def _alive_on_checkout(dbapi_connection: Any, record: Any, _proxy: Any) -> None:
    """Hand out only a connection that can still be used, without a round trip when it
    can be known without one.

    `pool_pre_ping` pinged on every checkout: BEGIN, an empty query and ROLLBACK, three
    round trips, five checkouts a conversation run. But a backend that ended (a restarted
    Postgres, `pg_terminate_backend`, a crash) closes its socket, and asyncpg notices that
    on its own: `is_closed()` is then true, for free. Only a connection that sat idle longer
    than `PING_AFTER_IDLE_S` is pinged, for what closes no socket. A closed or silent
    connection invalidates the pool (a restart took the others too) and the pool
    connects afresh; that is the `pool_pre_ping` behaviour, minus the pings.
    """
    driver = getattr(dbapi_connection, "_connection", None)  # the asyncpg connection
    if driver is not None and driver.is_closed():
        raise InvalidatePoolError("the database closed this pooled connection")
    idle_since = record.info.pop("idle_since", None)
    if idle_since is None or time.monotonic() - idle_since < PING_AFTER_IDLE_S:
        return
    try:
        dbapi_connection.ping()
    except Exception as exc:
        raise InvalidatePoolError("a pooled connection idle for a while did not answer") from exc


def session_factory(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    return async_sessionmaker(engine, expire_on_commit=False)


async def answers(engine: AsyncEngine) -> bool:
    """Whether one round trip to the database succeeds (readiness)."""
    try:
        async with engine.connect() as conn:
            await conn.execute(text("SELECT 1"))
    except (SQLAlchemyError, OSError) as exc:
        log.warning("the database does not answer", extra={"error_type": type(exc).__name__})
        return False
    return True
