"""Giving a test's migrated Postgres database to a later test instead of dropping it.

`CREATE DATABASE ... TEMPLATE` and `DROP DATABASE` cost 0.15-1.4 s each on a loaded CI
host (both walk and sync every file of the database, and a drop waits for every backend
of the server to acknowledge it), while deleting the few rows a test left takes ~10 ms.
A database goes back to the pool only when it is exactly as the migrated template was:

    `snapshot` is what must not change: every schema object of the database (relations
    with their columns, defaults, options, owners and grants; constraints, indexes,
    functions, triggers, rules, policies, types, extensions, schemas), the recorded
    Alembic revisions, large objects and database-level settings, and the template's
    sequence positions. A test that migrated, altered or dropped anything changes it,
    and its database is dropped as before.
    `reset` empties every table but `alembic_version` (foreign keys and triggers off for
    the deletion) and puts every sequence back where the template had it.

The template holds no row besides its Alembic revisions (`template_rows` checks; with
rows, nothing is reused). Connections a test left open are ended first, as the drop's
`WITH (FORCE)` did; session state (advisory locks, LISTEN, prepared statements, temporary
tables) ends with them.
"""

from __future__ import annotations

from dataclasses import dataclass

import asyncpg  # type: ignore[import-untyped]

_SCHEMA = """
SELECT string_agg(item, E'\\n' ORDER BY item) FROM (
  SELECT format('rel %s.%s %s %s %s %s', n.nspname, c.relname, c.relkind,
                pg_get_userbyid(c.relowner), c.relacl, c.reloptions)
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
   WHERE n.nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast')
     AND n.nspname NOT LIKE 'pg\\_%temp\\_%'
  UNION ALL
  SELECT format('col %s.%s %s %s %s %s', c.relname, a.attname,
                format_type(a.atttypid, a.atttypmod), a.attnotnull, a.attidentity,
                pg_get_expr(d.adbin, d.adrelid))
    FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
    JOIN pg_namespace n ON n.oid = c.relnamespace
    LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
   WHERE n.nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast')
     AND a.attnum > 0 AND NOT a.attisdropped
  UNION ALL
  SELECT format('con %s %s %s', conrelid::regclass, conname, pg_get_constraintdef(oid))
    FROM pg_constraint WHERE connamespace <> 'pg_catalog'::regnamespace
  UNION ALL
  SELECT format('idx %s', pg_get_indexdef(indexrelid)) FROM pg_index i
    JOIN pg_class c ON c.oid = i.indrelid WHERE c.relnamespace <> 'pg_catalog'::regnamespace
  UNION ALL
  SELECT format('fn %s %s %s', oid::regprocedure, md5(prosrc), proowner) FROM pg_proc
   WHERE pronamespace NOT IN ('pg_catalog'::regnamespace, 'information_schema'::regnamespace)
  UNION ALL
  SELECT format('trg %s', pg_get_triggerdef(oid)) FROM pg_trigger WHERE NOT tgisinternal
  UNION ALL
  SELECT format('rule %s', pg_get_ruledef(oid)) FROM pg_rewrite
   WHERE ev_class NOT IN (SELECT oid FROM pg_class
                           WHERE relnamespace = 'pg_catalog'::regnamespace
                              OR relnamespace = 'information_schema'::regnamespace)
  UNION ALL
  SELECT format('pol %s %s %s', polrelid::regclass, polname, pg_get_expr(polqual, polrelid))
    FROM pg_policy
  UNION ALL
  SELECT format('type %s.%s', typnamespace::regnamespace, typname) FROM pg_type
   WHERE typnamespace NOT IN ('pg_catalog'::regnamespace, 'information_schema'::regnamespace)
  UNION ALL
  SELECT format('ext %s %s', extname, extversion) FROM pg_extension
  UNION ALL
  SELECT format('nsp %s %s', nspname, nspacl) FROM pg_namespace
  UNION ALL
  SELECT format('lo %s', count(*)) FROM pg_largeobject_metadata
  UNION ALL
  SELECT format('set %s', setconfig) FROM pg_db_role_setting
   WHERE setdatabase = (SELECT oid FROM pg_database WHERE datname = current_database())
  UNION ALL
  SELECT format('alembic %s', version_num) FROM alembic_version
) AS objects(item)
"""
_TABLES = """
SELECT format('%I.%I', schemaname, tablename) FROM pg_tables
 WHERE schemaname NOT IN ('pg_catalog', 'information_schema')
   AND NOT (schemaname = 'public' AND tablename = 'alembic_version')
 ORDER BY 1
"""
_PREPARED = "SELECT count(*) FROM pg_prepared_xacts WHERE database = current_database()"
_SEQUENCES = """
SELECT format('%I.%I', schemaname, sequencename) FROM pg_sequences ORDER BY 1
"""


@dataclass(frozen=True)
class Snapshot:
    schema: str
    sequences: tuple[tuple[str, int, bool], ...]  # name, last_value, is_called


async def snapshot(conn: asyncpg.Connection) -> Snapshot:
    schema = await snapshot_schema(conn)
    positions = []
    for (name,) in await conn.fetch(_SEQUENCES):
        row = await conn.fetchrow(f"SELECT last_value, is_called FROM {name}")
        positions.append((name, row["last_value"], row["is_called"]))
    return Snapshot(schema, tuple(positions))


async def template_rows(conn: asyncpg.Connection) -> int:
    """Rows in the tables `reset` empties (must be none for a database to be reused)."""
    total = 0
    for (table,) in await conn.fetch(_TABLES):
        total += await conn.fetchval(f"SELECT count(*) FROM {table}")
    return total


async def reset(conn: asyncpg.Connection, template: Snapshot) -> bool:
    """Empty the database back to the template's state; False when it is not the
    template's schema any more (then it must be dropped)."""
    if await snapshot_schema(conn) != template.schema:
        return False
    if await conn.fetchval(_PREPARED):
        return False
    async with conn.transaction():
        await conn.execute("SET LOCAL session_replication_role = replica")
        for (table,) in await conn.fetch(_TABLES):
            await conn.execute(f"DELETE FROM {table}")
        for name, last_value, is_called in template.sequences:
            await conn.execute("SELECT setval($1::regclass, $2, $3)", name, last_value, is_called)
    return True


async def snapshot_schema(conn: asyncpg.Connection) -> str:
    schema: str = await conn.fetchval(_SCHEMA)
    return schema
