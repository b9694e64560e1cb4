"""Bring a database to the newest schema: Alembic, run in-process.

A schema is the core plus the tables of the tool packages a deployment switches on:

    migrations/versions/          the core's revisions (0001_core ..., branch label `core`)
    <tool package>/migrations/    a tool package's own revisions: its own branch label, its
                                  first revision a new root (`down_revision = None`), e.g.
                                  the example graph's `app/examples/graph/migrations/`

`Migrations` names those directories: `apply` the ones brought to head with the core (the
packages switched on), `known` the ones merely known (switched off now, but a database may
have run them before: Alembic must resolve every revision a database records, or it
refuses to migrate at all). So switching a tool package off never fails a start-up and
never drops its tables; a fresh database gets only what is switched on.

`upgrade_database(engine, migrations)` is what start-up (`MIGRATE_ON_START`) and
`chat-bff migrate` call; the container decides the `Migrations` from settings. It runs
Alembic on a connection of the service's own engine, so the URL, driver and SQLite
pragmas are the service's. On Postgres a session-level advisory lock serialises
concurrent starters: with several workers booting at once, one migrates and the others
wait, then find the database at head and do nothing.

The core scripts live in `migrations/` at the repository root (`alembic.ini` there serves
the `alembic` command line for authoring new revisions); a built wheel carries them inside
the package as `app/migrations`, so `chat-bff migrate` works wherever it is installed.
Tool packages carry their own `migrations/` package, so they ship with their code.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import MetaData, text
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from app.store.db import Base

# Inside the package when it is installed from a wheel (setup.py maps the repository's
# `migrations/` to `app/migrations`); beside the package in a checkout. Never the working
# directory: a service must not run whatever scripts happen to lie where it was started.
_PACKAGE = Path(__file__).resolve().parents[1]
MIGRATIONS_CANDIDATES = (_PACKAGE / "migrations", _PACKAGE.parent / "migrations")
# pg_advisory_lock key: "chatbff" + "\x01" as a big-endian 64-bit integer.
MIGRATION_LOCK_KEY = int.from_bytes(b"chatbff\x01", "big")


@dataclass(frozen=True)
class Migrations:
    """Which tool packages' revision directories a database follows besides the core."""

    apply: tuple[Path, ...] = ()  # switched on: brought to head with the core
    known: tuple[Path, ...] = ()  # switched off: resolvable, never upgraded


CORE_ONLY = Migrations()


def target_metadata() -> MetaData:
    """The core's tables, as Alembic's autogenerate and the schema test see them.

    Every module of the `app.store.tables` package is imported here, so that what it
    declares on `Base` is registered. Tool packages keep their tables on metadata of
    their own, so importing one never adds its tables to the core's.
    """
    import app.store.tables as tables

    for module in pkgutil.iter_modules(tables.__path__, prefix="app.store.tables."):
        importlib.import_module(module.name)
    return Base.metadata


def migrations_dir() -> Path:
    for candidate in MIGRATIONS_CANDIDATES:
        if (candidate / "env.py").is_file():
            return candidate.resolve()
    tried = ", ".join(str(c) for c in MIGRATIONS_CANDIDATES)
    raise RuntimeError(f"Alembic migrations not found (looked in {tried})")


def _locations(migrations: Migrations) -> list[Path]:
    found = [migrations_dir() / "versions", *migrations.apply, *migrations.known]
    return list(dict.fromkeys(p.resolve() for p in found))


def alembic_config(migrations: Migrations = CORE_ONLY) -> Config:
    config = Config()
    config.set_main_option("script_location", str(migrations_dir()))
    config.set_main_option("path_separator", "newline")
    config.set_main_option("version_locations", "\n".join(str(p) for p in _locations(migrations)))
    return config


def head_revisions(migrations: Migrations = CORE_ONLY) -> tuple[str, ...]:
    """The revisions an up-to-date database records: the core's head and the head of
    each applied directory (sorted)."""
    script = ScriptDirectory.from_config(alembic_config(migrations))
    wanted = {(migrations_dir() / "versions").resolve(), *(p.resolve() for p in migrations.apply)}
    heads = [head for head in script.get_heads() if _directory(script, head) in wanted]
    return tuple(sorted(heads))


def _directory(script: ScriptDirectory, revision: str) -> Path | None:
    found = script.get_revision(revision)
    return Path(found.path).resolve().parent if found is not None else None


def _run(
    connection: Connection,
    action: Literal["upgrade", "downgrade"],
    revisions: Sequence[str],
    migrations: Migrations,
) -> None:
    config = alembic_config(migrations)
    config.attributes["connection"] = connection
    for revision in revisions:
        if action == "upgrade":
            command.upgrade(config, revision)
        else:
            command.downgrade(config, revision)


async def _migrate(
    engine: AsyncEngine,
    action: Literal["upgrade", "downgrade"],
    revisions: Sequence[str],
    migrations: Migrations,
) -> None:
    async with engine.connect() as conn:
        locked = conn.dialect.name == "postgresql"
        if locked:
            await conn.execute(text("SELECT pg_advisory_lock(:key)"), {"key": MIGRATION_LOCK_KEY})
            await conn.commit()
        try:
            await conn.run_sync(_run, action, revisions, migrations)
            await conn.commit()
        finally:
            if locked:
                await _unlock(conn)


async def _unlock(conn: AsyncConnection) -> None:
    if conn.in_transaction():
        await conn.rollback()
    await conn.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": MIGRATION_LOCK_KEY})
    await conn.commit()


async def upgrade_database(
    engine: AsyncEngine,
    migrations: Migrations = CORE_ONLY,
    *,
    revision: str | None = None,
) -> None:
    """Alembic `upgrade`: the core and every applied directory to its head, or to
    `revision` when given; safe to run concurrently."""
    targets = (revision,) if revision is not None else head_revisions(migrations)
    await _migrate(engine, "upgrade", targets, migrations)


async def downgrade_database(
    engine: AsyncEngine,
    migrations: Migrations = CORE_ONLY,
    *,
    revision: str = "base",
) -> None:
    """Alembic `downgrade` to `revision` (an empty schema by default); for tests and
    rollbacks of a bad release."""
    await _migrate(engine, "downgrade", (revision,), migrations)


async def current_revisions(engine: AsyncEngine) -> tuple[str, ...]:
    """The revisions the database records (sorted), empty when it was never migrated."""

    def read(connection: Connection) -> tuple[str, ...]:
        return tuple(sorted(MigrationContext.configure(connection).get_current_heads()))

    async with engine.connect() as conn:
        return await conn.run_sync(read)
