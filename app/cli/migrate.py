"""`chat-bff migrate`: bring the database schema up to date (or down, or say where it is)."""

from __future__ import annotations

import argparse
from typing import Any

from app.settings import Settings
from app.store.db import create_engine
from app.store.migrate import current_revision, downgrade_database, upgrade_database

Subparsers = Any  # argparse's _SubParsersAction is private


async def _migrate(args: argparse.Namespace, settings: Settings) -> int:
    engine = create_engine(settings.database_url)
    try:
        if args.current:
            print(await current_revision(engine) or "base (empty)")
            return 0
        if args.down is not None:
            await downgrade_database(engine, args.down)
        else:
            await upgrade_database(engine, args.to)
        print(f"database at {await current_revision(engine) or 'base (empty)'}")
        return 0
    finally:
        await engine.dispose()


def add_migrate(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser("migrate", help="bring the database schema up to date (Alembic)")
    target = parser.add_mutually_exclusive_group()
    target.add_argument("--to", default="head", help="revision to upgrade to (default: head)")
    target.add_argument("--down", metavar="REVISION", help="downgrade to REVISION (e.g. base)")
    target.add_argument("--current", action="store_true", help="print the current revision")
    parser.set_defaults(handler=_migrate)
