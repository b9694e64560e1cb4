"""Alembic migrations of the core: empty -> head -> base on both databases, and the models
match. (The example graph's own branch: `test_example_migrations.py`.)"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from app.examples.graph.tables import GraphBase
from app.store.db import create_engine
from app.store.migrate import (
    current_revisions,
    downgrade_database,
    head_revisions,
    target_metadata,
    upgrade_database,
)
from tests.fakes.db import WITH_EXAMPLE
from tests.store.schema import CORE_TABLES, differences, tables


@pytest.fixture
async def empty_engine(database_url: str) -> AsyncIterator[AsyncEngine]:
    engine = create_engine(database_url)
    yield engine
    await engine.dispose()


async def test_upgrade_takes_an_empty_database_to_the_cores_head(
    empty_engine: AsyncEngine,
) -> None:
    await upgrade_database(empty_engine)

    assert await current_revisions(empty_engine) == head_revisions() == ("0006_usage",)
    assert await tables(empty_engine) == CORE_TABLES


async def test_upgrade_twice_is_a_no_op(empty_engine: AsyncEngine) -> None:
    await upgrade_database(empty_engine)
    await upgrade_database(empty_engine)

    assert await current_revisions(empty_engine) == head_revisions()


async def test_downgrade_to_base_leaves_only_the_version_table(
    empty_engine: AsyncEngine,
) -> None:
    await upgrade_database(empty_engine, WITH_EXAMPLE)
    await downgrade_database(empty_engine, WITH_EXAMPLE)

    assert await current_revisions(empty_engine) == ()
    assert await tables(empty_engine) == set()


async def test_the_core_models_match_the_core_migrations(empty_engine: AsyncEngine) -> None:
    await upgrade_database(empty_engine)

    assert await differences(empty_engine, target_metadata()) == []


async def test_the_migrated_test_database_matches_the_core_and_example_models(
    db_engine: AsyncEngine,
) -> None:
    assert await differences(db_engine, target_metadata(), GraphBase.metadata) == []


@pytest.mark.postgres
async def test_concurrent_starts_on_postgres_migrate_once(postgres_url: str) -> None:
    engines = [create_engine(postgres_url) for _ in range(4)]
    try:
        await asyncio.gather(*(upgrade_database(e, WITH_EXAMPLE) for e in engines))
        assert await current_revisions(engines[0]) == head_revisions(WITH_EXAMPLE)
    finally:
        for engine in engines:
            await engine.dispose()
