"""Alembic migrations: empty -> head -> base on both databases, and the models match."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncEngine

from app.store.db import create_engine
from app.store.migrate import (
    current_revision,
    downgrade_database,
    head_revision,
    target_metadata,
    upgrade_database,
)

CORE_TABLES = {"conversations", "messages", "runs", "run_events", "audit_log"}


async def _tables(engine: AsyncEngine) -> set[str]:
    async with engine.connect() as conn:
        return set(await conn.run_sync(lambda c: inspect(c).get_table_names()))


@pytest.fixture
async def empty_engine(database_url: str) -> Any:
    engine = create_engine(database_url)
    yield engine
    await engine.dispose()


async def test_upgrade_takes_an_empty_database_to_head(empty_engine: AsyncEngine) -> None:
    await upgrade_database(empty_engine)

    assert await current_revision(empty_engine) == head_revision()
    assert await _tables(empty_engine) >= CORE_TABLES


async def test_upgrade_twice_is_a_no_op(empty_engine: AsyncEngine) -> None:
    await upgrade_database(empty_engine)
    await upgrade_database(empty_engine)

    assert await current_revision(empty_engine) == head_revision()


async def test_downgrade_to_base_leaves_only_the_version_table(
    empty_engine: AsyncEngine,
) -> None:
    await upgrade_database(empty_engine)
    await downgrade_database(empty_engine)

    assert await current_revision(empty_engine) is None
    assert await _tables(empty_engine) <= {"alembic_version"}


async def test_models_match_the_migrations(db_engine: AsyncEngine) -> None:
    def diff(connection: Connection) -> list[Any]:
        context = MigrationContext.configure(connection, opts={"compare_type": True})
        return list(compare_metadata(context, target_metadata()))

    async with db_engine.connect() as conn:
        assert await conn.run_sync(diff) == []


@pytest.mark.postgres
async def test_concurrent_starts_on_postgres_migrate_once(postgres_url: str) -> None:
    engines = [create_engine(postgres_url) for _ in range(4)]
    try:
        await asyncio.gather(*(upgrade_database(e) for e in engines))
        assert await current_revision(engines[0]) == head_revision()
    finally:
        for engine in engines:
            await engine.dispose()
