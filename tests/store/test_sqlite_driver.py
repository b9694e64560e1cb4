"""The SQLite engine's one-trip cursor answers as the stock adapter does (rows, row
counts, last row ids, errors, executemany), and an aiosqlite without the private call it
leans on falls back to the stock adapter instead of failing every statement."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aiosqlite
import pytest
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError

from app.store.db import create_engine
from app.store.sqlite_driver import OneTripDbapi, one_trip_dbapi


async def _exercise(url: str) -> tuple[list[tuple[int, str]], int, int | None]:
    engine = create_engine(url)
    try:
        async with engine.begin() as conn:
            await conn.execute(text("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT UNIQUE)"))
            inserted = await conn.execute(text("INSERT INTO t (name) VALUES ('a')"))
            last = inserted.lastrowid
            await conn.execute(
                text("INSERT INTO t (name) VALUES (:name)"), [{"name": "b"}, {"name": "c"}]
            )
            updated = await conn.execute(text("UPDATE t SET name = name || '!' WHERE id > 1"))
        with pytest.raises(IntegrityError):
            async with engine.begin() as conn:
                await conn.execute(text("INSERT INTO t (name) VALUES ('a')"))
        async with engine.connect() as conn:
            rows = [(r.id, r.name) for r in await conn.execute(text("SELECT * FROM t ORDER BY id"))]
        return rows, updated.rowcount, last
    finally:
        await engine.dispose()


async def test_statements_answer_rows_counts_ids_and_errors(tmp_path: Path) -> None:
    engine = create_engine(f"sqlite+aiosqlite:///{tmp_path / 'one.db'}")
    assert isinstance(engine.dialect.dbapi, OneTripDbapi)
    await engine.dispose()

    rows, updated, last = await _exercise(f"sqlite+aiosqlite:///{tmp_path / 'one.db'}")

    assert rows == [(1, "a"), (2, "b!"), (3, "c!")]
    assert updated == 2
    assert last == 1


async def test_an_aiosqlite_without_its_queue_call_gets_the_stock_adapter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delattr(aiosqlite.Connection, "_execute")
    assert one_trip_dbapi() is None
    monkeypatch.undo()

    assert one_trip_dbapi() is not None


async def test_a_rollback_with_nothing_to_undo_makes_no_trip_and_one_that_has_undoes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = create_engine(f"sqlite+aiosqlite:///{tmp_path / 'one.db'}")
    trips: list[str] = []
    queue = aiosqlite.Connection._execute

    def counted(self: aiosqlite.Connection, fn: Any, *args: Any, **kwargs: Any) -> Any:
        trips.append(getattr(fn, "__name__", repr(fn)))
        return queue(self, fn, *args, **kwargs)  # type: ignore[no-untyped-call]

    try:
        async with engine.begin() as conn:
            await conn.execute(text("CREATE TABLE t (name TEXT)"))
        monkeypatch.setattr(aiosqlite.Connection, "_execute", counted)

        async with engine.begin() as conn:  # committed, then returned to the pool
            await conn.execute(text("INSERT INTO t VALUES ('kept')"))
        async with engine.connect() as conn:  # a read, then returned to the pool
            await conn.execute(text("SELECT * FROM t"))
        assert trips == ["_run", "commit", "_run"]

        async with engine.connect() as conn:
            await conn.execute(text("INSERT INTO t VALUES ('undone')"))
            await conn.rollback()
        assert trips[-2:] == ["_run", "rollback"]
        async with engine.connect() as conn:
            names = (await conn.execute(text("SELECT name FROM t"))).scalars().all()
        assert names == ["kept"]
    finally:
        await engine.dispose()
