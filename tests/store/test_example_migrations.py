"""The example graph's own Alembic branch, on both databases: a fresh database gets its
tables only where the example is on, and a database of the release that kept them in the
core upgrades with every row, whether the example is on or off."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from app.examples.graph.repo import GraphRepo
from app.examples.graph.tables import GraphBase, GraphEdgeRow, GraphNodeRow
from app.store.database import Database
from app.store.db import create_engine
from app.store.migrate import Migrations, current_revisions, target_metadata, upgrade_database
from app.tools.modules import migration_dirs
from tests.store.schema import CORE_TABLES, GRAPH_TABLES, differences, tables

GRAPH = migration_dirs(["app.examples.graph"])
EXAMPLE_ON = Migrations(apply=GRAPH)
EXAMPLE_OFF = Migrations(known=GRAPH)


@pytest.fixture
async def engine(database_url: str) -> AsyncIterator[AsyncEngine]:
    engine = create_engine(database_url)
    yield engine
    await engine.dispose()


async def _previous_release(engine: AsyncEngine) -> list[tuple[str, str]]:
    """What the release before the example moved out left: the core at 0003_identity and
    the graph tables its 0002_tools created (the DDL the example's graph_0001 now runs,
    which the models match), holding rows. Returns those rows (node names, relations)."""
    await upgrade_database(engine)
    async with engine.begin() as conn:
        await conn.run_sync(GraphBase.metadata.create_all)
    async with Database(engine).write() as tx:
        repo = GraphRepo(tx.session, "scope-1")
        ada = await repo.add_node("Person", "Ada", {"born": 1815})
        engine_node = await repo.add_node("Machine", "Analytical Engine", {})
        await repo.connect(ada.id, engine_node.id, "designed")
    return await _graph_rows(engine)


async def _graph_rows(engine: AsyncEngine) -> list[tuple[str, str]]:
    async with Database(engine).read() as tx:
        nodes = [("node", n) for n in await tx.session.scalars(select(GraphNodeRow.name))]
        edges = [("edge", e) for e in await tx.session.scalars(select(GraphEdgeRow.relation))]
    return sorted(nodes + edges)


async def test_a_fresh_database_without_the_example_has_no_graph_tables(
    engine: AsyncEngine,
) -> None:
    await upgrade_database(engine, EXAMPLE_OFF)

    assert await tables(engine) == CORE_TABLES
    assert await current_revisions(engine) == ("0019_conversation_kind",)


async def test_a_fresh_database_with_the_example_gets_its_tables_from_its_branch(
    engine: AsyncEngine,
) -> None:
    await upgrade_database(engine, EXAMPLE_ON)

    assert await tables(engine) == CORE_TABLES | GRAPH_TABLES
    assert await current_revisions(engine) == ("0019_conversation_kind", "graph_0001")
    assert await differences(engine, target_metadata(), GraphBase.metadata) == []


async def test_an_old_database_upgrades_with_the_example_on_and_keeps_its_graph(
    engine: AsyncEngine,
) -> None:
    rows = await _previous_release(engine)

    await upgrade_database(engine, EXAMPLE_ON)

    assert await _graph_rows(engine) == rows
    assert await current_revisions(engine) == ("0019_conversation_kind", "graph_0001")
    assert await differences(engine, target_metadata(), GraphBase.metadata) == []


async def test_an_old_database_upgrades_with_the_example_off_and_keeps_its_graph(
    engine: AsyncEngine,
) -> None:
    rows = await _previous_release(engine)

    await upgrade_database(engine, EXAMPLE_OFF)

    assert await _graph_rows(engine) == rows
    assert await current_revisions(engine) == ("0019_conversation_kind",)


async def test_switching_the_example_off_keeps_its_tables_and_still_migrates(
    engine: AsyncEngine,
) -> None:
    await upgrade_database(engine, EXAMPLE_ON)
    async with Database(engine).write() as tx:
        await GraphRepo(tx.session, "scope-1").add_node("Person", "Ada", {})

    await upgrade_database(engine, EXAMPLE_OFF)

    assert await _graph_rows(engine) == [("node", "Ada")]
    assert await current_revisions(engine) == ("0019_conversation_kind", "graph_0001")
