"""`chat-bff migrate`: bring the database schema up to date (or down, or say where it is).

The schema is the core plus the tables of the tool modules the settings switch on (the
example graph's, in development); `app.container_tools.database_migrations` decides which.
"""

from __future__ import annotations

import argparse
from typing import Any

from app.container_tools import database_migrations
from app.settings import Settings
from app.store.db import create_engine
from app.store.migrate import current_revisions, downgrade_database, upgrade_database

Subparsers = Any  # argparse's _SubParsersAction is private


async def _migrate(args: argparse.Namespace, settings: Settings) -> int:
    engine = create_engine(settings.database_url)
    migrations = database_migrations(settings)
    try:
        if args.current:
            print(", ".join(await current_revisions(engine)) or "base (empty)")
            return 0
        if args.down is not None:
            await downgrade_database(engine, migrations, revision=args.down)
        else:
            await upgrade_database(engine, migrations, revision=args.to)
        print(f"database at {', '.join(await current_revisions(engine)) or 'base (empty)'}")
        return 0
    finally:
        await engine.dispose()


def add_migrate(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser("migrate", help="bring the database schema up to date (Alembic)")
    target = parser.add_mutually_exclusive_group()
    target.add_argument(
        "--to", default=None, help="revision to upgrade to (default: every branch's head)"
    )
    target.add_argument("--down", metavar="REVISION", help="downgrade to REVISION (e.g. base)")
    target.add_argument("--current", action="store_true", help="print the current revision")
    parser.set_defaults(handler=_migrate)
