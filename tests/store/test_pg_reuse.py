"""A migrated Postgres database a test is done with is given to the next test only as the
migrated template was: empty, sequences back, same schema; otherwise it is dropped."""

from __future__ import annotations

from pathlib import Path

import asyncpg  # type: ignore[import-untyped]
import pytest

from app.store.db import create_engine, session_factory
from app.store.repos.conversations import ConversationRepo
from tests.fakes.db import _dsn, _fresh_database, _postgres_url

pytestmark = pytest.mark.postgres


async def _databases() -> set[str]:
    conn = await asyncpg.connect(_dsn(_postgres_url()), timeout=5)
    try:
        return {r[0] for r in await conn.fetch("SELECT datname FROM pg_database")}
    finally:
        await conn.close()


async def _sql(url: str, statement: str) -> object:
    conn = await asyncpg.connect(_dsn(url), timeout=5)
    try:
        return await conn.fetchval(statement)
    finally:
        await conn.close()


async def test_the_next_test_gets_the_database_back_empty(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    root = tmp_path_factory.getbasetemp()
    async with _fresh_database("postgres", tmp_path, template_root=root) as first:
        engine = create_engine(first)
        try:
            async with session_factory(engine).begin() as s:
                await ConversationRepo(s).create("someone", title="left behind")
        finally:
            await engine.dispose()
        revision = await _sql(first, "SELECT version_num FROM alembic_version LIMIT 1")
    async with _fresh_database("postgres", tmp_path, template_root=root) as second:
        assert second == first  # reused, not created again
        assert await _sql(second, "SELECT count(*) FROM conversations") == 0
        assert await _sql(second, "SELECT version_num FROM alembic_version LIMIT 1") == revision


async def test_a_database_whose_schema_a_test_changed_is_dropped(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    root = tmp_path_factory.getbasetemp()
    async with _fresh_database("postgres", tmp_path, template_root=root) as first:
        await _sql(first, "CREATE TABLE scratch (id int)")
    async with _fresh_database("postgres", tmp_path, template_root=root) as second:
        assert second != first
        assert await _sql(second, "SELECT to_regclass('scratch') IS NULL") is True
    assert first.rsplit("/", 1)[1] not in await _databases()
