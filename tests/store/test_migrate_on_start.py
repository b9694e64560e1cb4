"""Start-up's migration (`upgrade_on_start`): a database at head is read, not migrated; one
behind is upgraded by a child process, whose failure fails the start with Alembic's words;
the heads it compares with come from the revision files without Alembic."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, NoReturn

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from app.store.db import create_engine
from app.store.migrate import (
    CORE_ONLY,
    Migrations,
    current_revisions,
    head_revisions,
    script_heads,
    upgrade_on_start,
)
from app.tools.modules import migration_dirs
from tests.fakes.db import WITH_EXAMPLE
from tests.store.schema import CORE_TABLES, GRAPH_TABLES, tables

GRAPH_KNOWN = Migrations(known=migration_dirs(["app.examples.graph"]))


@pytest.fixture
async def empty_engine(database_url: str) -> AsyncIterator[AsyncEngine]:
    engine = create_engine(database_url)
    yield engine
    await engine.dispose()


@pytest.fixture
async def migrated_engine(migrated_database_url: str) -> AsyncIterator[AsyncEngine]:
    engine = create_engine(migrated_database_url)
    yield engine
    await engine.dispose()


@pytest.mark.parametrize("migrations", [CORE_ONLY, WITH_EXAMPLE, GRAPH_KNOWN])
def test_the_heads_read_from_the_files_are_alembics(migrations: Migrations) -> None:
    assert script_heads(migrations) == head_revisions(migrations)


def _revision_file(revision: str, down_revision: str) -> str:
    """A tool package's revision script whose ids are the Python expressions given."""
    return f"""PREFIX = "computed_"
revision = {revision}
down_revision = {down_revision}
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
"""


def test_a_revision_whose_id_is_computed_is_read_as_alembic_reads_it(tmp_path: Path) -> None:
    (tmp_path / "computed_0001.py").write_text(_revision_file('PREFIX + "0001"', "None"))
    (tmp_path / "computed_0002.py").write_text(_revision_file('"computed_0002"', 'PREFIX + "0001"'))
    migrations = Migrations(apply=(tmp_path,))

    heads = script_heads(migrations)

    assert heads == head_revisions(migrations)
    assert "computed_0002" in heads and "computed_0001" not in heads


async def test_an_empty_database_is_brought_to_head_by_a_child_process(
    empty_engine: AsyncEngine, database_url: str
) -> None:
    async with upgrade_on_start(empty_engine, database_url, WITH_EXAMPLE):
        pass

    assert await current_revisions(empty_engine) == head_revisions(WITH_EXAMPLE)
    assert await tables(empty_engine) == CORE_TABLES | GRAPH_TABLES


async def test_a_database_at_head_starts_without_a_child_process(
    migrated_engine: AsyncEngine, migrated_database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def no_child(*args: Any, **kwargs: Any) -> NoReturn:
        raise AssertionError("a child process was started")

    monkeypatch.setattr(asyncio, "create_subprocess_exec", no_child)
    # The migrated database holds the example's tables too; the core alone is also at head.
    for migrations in (CORE_ONLY, WITH_EXAMPLE, GRAPH_KNOWN):
        async with upgrade_on_start(migrated_engine, migrated_database_url, migrations):
            pass


async def test_a_failed_upgrade_fails_the_start_with_alembics_words(
    empty_engine: AsyncEngine, database_url: str
) -> None:
    async with empty_engine.begin() as conn:
        await conn.execute(text("CREATE TABLE alembic_version (version_num VARCHAR(32))"))
        await conn.execute(text("INSERT INTO alembic_version VALUES ('9999_from_the_future')"))

    with pytest.raises(RuntimeError, match="9999_from_the_future") as failed:
        async with upgrade_on_start(empty_engine, database_url, CORE_ONLY):
            pass
    assert "database migration failed" in str(failed.value)
