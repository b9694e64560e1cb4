"""What a unit of work raises when its connection is lost: `Unavailable` for the database
ending it, but a cancelled task stays cancelled (SQLAlchemy counts a cancellation under
a statement as a disconnect; turning it into an error left loops that catch errors
running forever, and shut-downs waiting on them), and an error of the unit's own stays
what it was."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg  # type: ignore[import-untyped]
import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url

from app.domain.errors import Unavailable
from app.store.database import Database
from app.store.db import create_engine
from tests.fakes.db import _dsn, end_connections


@pytest.fixture
async def database(postgres_url: str) -> AsyncIterator[Database]:
    db = Database(create_engine(postgres_url))
    yield db
    await db.dispose()


async def _running(postgres_url: str, query: str) -> None:
    """Wait until a backend of this database runs `query`."""
    admin = await asyncpg.connect(_dsn(postgres_url))
    try:
        sql = "SELECT count(*) FROM pg_stat_activity WHERE datname = $1 AND query = $2"
        while not await admin.fetchval(sql, make_url(postgres_url).database, query):
            await asyncio.sleep(0.01)
    finally:
        await admin.close()


SLEEP = "SELECT pg_sleep(30)"


async def _sleep_in_a_unit(db: Database) -> None:
    async with db.read() as tx:
        await tx.session.execute(text(SLEEP))


@pytest.mark.postgres
async def test_a_statement_under_which_postgres_ends_the_connection_is_unavailable(
    database: Database, postgres_url: str
) -> None:
    statement = asyncio.create_task(_sleep_in_a_unit(database))
    await _running(postgres_url, SLEEP)
    await end_connections(postgres_url)

    with pytest.raises(Unavailable) as raised:
        await statement
    assert raised.value.code == "database_unavailable"
    assert raised.value.retry_after == 1.0


@pytest.mark.postgres
async def test_a_task_cancelled_during_a_statement_stays_cancelled(
    database: Database, postgres_url: str
) -> None:
    statement = asyncio.create_task(_sleep_in_a_unit(database))
    await _running(postgres_url, SLEEP)

    statement.cancel()

    with pytest.raises(asyncio.CancelledError):
        await statement


@pytest.mark.postgres
async def test_an_error_of_the_units_own_is_not_the_database(database: Database) -> None:
    async def read_a_missing_file() -> None:
        async with database.read() as tx:
            await tx.session.execute(text("SELECT 1"))
            Path("/nonexistent/chat-bff/file").read_text()

    with pytest.raises(FileNotFoundError):
        await read_a_missing_file()


@pytest.mark.postgres
async def test_a_unit_opened_while_nothing_listens_is_unavailable(postgres_url: str) -> None:
    with socket.socket() as closed:  # bound, never listening: every connect is refused
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
        nowhere = make_url(postgres_url).set(host="127.0.0.1", port=port)
        db = Database(create_engine(nowhere.render_as_string(hide_password=False)))
        try:
            with pytest.raises(Unavailable) as raised:
                async with db.read() as tx:
                    await tx.session.execute(text("SELECT 1"))
        finally:
            await db.dispose()
    assert raised.value.code == "database_unavailable"
