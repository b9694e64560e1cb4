"""Helpers for the migration tests: what a database holds, and how it differs from a model."""

from __future__ import annotations

from typing import Any

from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import MetaData, inspect
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncEngine

CORE_TABLES = {
    "conversations",
    "messages",
    "runs",
    "run_events",
    "audit_log",
    "tool_approvals",
    "tool_elicitations",
    "tool_proposals",
    "tool_proposal_batches",
    "files",
    "api_keys",
    "queue_heads",
    "queue_events",
    "conversation_feed",
    "background_jobs",
    "usage_records",
    "idempotency_keys",
}
GRAPH_TABLES = {"graph_nodes", "graph_edges"}


async def tables(engine: AsyncEngine) -> set[str]:
    """The database's tables, Alembic's version table left out."""
    async with engine.connect() as conn:
        found = set(await conn.run_sync(lambda c: inspect(c).get_table_names()))
    return found - {"alembic_version"}


async def differences(engine: AsyncEngine, *metadata: MetaData) -> list[Any]:
    """What autogenerate would change to make the database match the given models."""

    def diff(connection: Connection) -> list[Any]:
        context = MigrationContext.configure(connection, opts={"compare_type": True})
        return list(compare_metadata(context, list(metadata)))  # type: ignore[arg-type]

    async with engine.connect() as conn:
        return await conn.run_sync(diff)
