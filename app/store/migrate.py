"""Bring a database to the newest schema: Alembic `upgrade head`, run in-process.

`upgrade_database(engine)` is what start-up (`MIGRATE_ON_START`) and `chat-bff migrate`
call. It runs Alembic on a connection of the service's own engine, so the URL, driver and
SQLite pragmas are the service's. On Postgres a session-level advisory lock serialises
concurrent starters: with several workers booting at once, one migrates and the others
wait, then find the database at head and do nothing.

The scripts live in `migrations/` at the repository root (`alembic.ini` there serves the
`alembic` command line for authoring new revisions); a built wheel carries them inside
the package as `app/migrations`, so `chat-bff migrate` works wherever it is installed.
"""

from __future__ import annotations

import importlib
import pkgutil
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


def target_metadata() -> MetaData:
    """All tables of the service, as Alembic's autogenerate and the schema test see them.

    Convention: tables live in modules of `app.store` named `tables` or `*_tables`
    (`tool_tables`, `identity_tables`, ...); each is imported here so that what it
    declares on `Base` is registered.
    """
    import app.store as store

    for module in pkgutil.iter_modules(store.__path__, prefix="app.store."):
        if module.name.rsplit(".", 1)[-1] == "tables" or module.name.endswith("_tables"):
            importlib.import_module(module.name)
    return Base.metadata


def migrations_dir() -> Path:
    for candidate in MIGRATIONS_CANDIDATES:
        if (candidate / "env.py").is_file():
            return candidate.resolve()
    tried = ", ".join(str(c) for c in MIGRATIONS_CANDIDATES)
    raise RuntimeError(f"Alembic migrations not found (looked in {tried})")


def alembic_config() -> Config:
    config = Config()
    config.set_main_option("script_location", str(migrations_dir()))
    return config


def head_revision() -> str | None:
    return ScriptDirectory.from_config(alembic_config()).get_current_head()


def _run(connection: Connection, action: Literal["upgrade", "downgrade"], revision: str) -> None:
    config = alembic_config()
    config.attributes["connection"] = connection
    if action == "upgrade":
        command.upgrade(config, revision)
    else:
        command.downgrade(config, revision)


async def _migrate(
    engine: AsyncEngine, action: Literal["upgrade", "downgrade"], revision: str
) -> None:
    async with engine.connect() as conn:
        locked = conn.dialect.name == "postgresql"
        if locked:
            await conn.execute(text("SELECT pg_advisory_lock(:key)"), {"key": MIGRATION_LOCK_KEY})
            await conn.commit()
        try:
            await conn.run_sync(_run, action, revision)
            await conn.commit()
        finally:
            if locked:
                await _unlock(conn)


async def _unlock(conn: AsyncConnection) -> None:
    if conn.in_transaction():
        await conn.rollback()
    await conn.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": MIGRATION_LOCK_KEY})
    await conn.commit()


async def upgrade_database(engine: AsyncEngine, revision: str = "head") -> None:
    """Alembic `upgrade` to `revision` (the newest by default); safe to run concurrently."""
    await _migrate(engine, "upgrade", revision)


async def downgrade_database(engine: AsyncEngine, revision: str = "base") -> None:
    """Alembic `downgrade` to `revision` (an empty schema by default); for tests and
    rollbacks of a bad release."""
    await _migrate(engine, "downgrade", revision)


async def current_revision(engine: AsyncEngine) -> str | None:
    """The revision the database is at, None when it was never migrated."""

    def read(connection: Connection) -> str | None:
        return MigrationContext.configure(connection).get_current_revision()

    async with engine.connect() as conn:
        return await conn.run_sync(read)
