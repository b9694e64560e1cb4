"""Alembic environment for SQLite (aiosqlite) and Postgres (asyncpg).

Two ways in:
- programmatic (`app.store.migrate`, used at start-up, by `chat-bff migrate` and by tests):
  the caller passes an open sync connection in `config.attributes["connection"]`;
- the `alembic` command line (e.g. `alembic revision --autogenerate --head core@head
  -m ...`): the URL is `-x url=...`, else `sqlalchemy.url` if set, else the app's settings
  (`DATABASE_URL`).

Autogenerate compares the core's tables only: tables a tool package keeps (the example
graph's) belong to that package's own revisions, so a database holding them never makes
autogenerate propose dropping them from the core.
"""

from __future__ import annotations

import asyncio
from logging.config import fileConfig
from typing import Any

from alembic import context
from sqlalchemy.engine import Connection

from app.store.db import create_engine
from app.store.migrate import target_metadata

config = context.config


def _url() -> str:
    url = context.get_x_argument(as_dictionary=True).get("url")
    url = url or config.get_main_option("sqlalchemy.url")
    if not url:
        from app.settings import get_settings

        url = get_settings().database_url
    return url


def _configure(connection: Connection) -> None:
    metadata = target_metadata()

    def core_only(name: str | None, type_: str, parent_names: Any) -> bool:
        return type_ != "table" or name in metadata.tables

    context.configure(
        connection=connection,
        target_metadata=metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
        include_name=core_only,
    )


def _run_on(connection: Connection) -> None:
    _configure(connection)
    with context.begin_transaction():
        context.run_migrations()


async def _run_with_own_engine() -> None:
    engine = create_engine(_url())
    try:
        async with engine.connect() as connection:
            await connection.run_sync(_run_on)
            await connection.commit()
    finally:
        await engine.dispose()


def run_offline() -> None:
    url = _url()
    context.configure(
        url=url,
        target_metadata=target_metadata(),
        literal_binds=True,
        render_as_batch=url.startswith("sqlite"),
    )
    with context.begin_transaction():
        context.run_migrations()


def run_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _run_on(connection)
        return
    asyncio.run(_run_with_own_engine())


if config.config_file_name is not None and "connection" not in config.attributes:
    fileConfig(config.config_file_name, disable_existing_loggers=False)

if context.is_offline_mode():
    run_offline()
else:
    run_online()
