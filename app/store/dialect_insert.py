"""The database's own INSERT, for its ON CONFLICT clauses, with Postgres's dialect
imported only where the database is Postgres.

`sqlalchemy.dialects.postgresql` is about 2.4 MB of a started worker's memory (its types,
catalogue and compiler); a worker on SQLite used it for nothing but these builders and the
JSON columns' JSONB variant (`app.store.tables.types`). On Postgres the engine has
imported it already.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sqlalchemy.dialects.postgresql import Insert as PgInsert
    from sqlalchemy.dialects.sqlite import Insert as SqliteInsert
    from sqlalchemy.ext.asyncio import AsyncSession


def conflict_insert(session: AsyncSession, table: Any) -> PgInsert | SqliteInsert:
    """`insert(table)` of the session's database, which takes `on_conflict_do_*`."""
    if session.get_bind().dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as pg_insert

        return pg_insert(table)
    from sqlalchemy.dialects.sqlite import insert as sqlite_insert

    return sqlite_insert(table)
