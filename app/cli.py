"""`chat-bff` command line: `chat-bff migrate`, and room for more subcommands.

    chat-bff migrate                 # Alembic upgrade: the core and the tool modules on
    chat-bff migrate --to 0001_core  # or to a given revision
    chat-bff migrate --down base     # downgrade (rollback of a bad release)
    chat-bff migrate --current       # print the revision the database is at

Adding a subcommand: write `_add_<name>(subparsers)` that adds a parser and sets
`handler=` to an `async def (args, settings) -> int`, then list it in `COMMANDS`. Settings
come from the environment (`DATABASE_URL`, ...) through `get_settings()`, once, in `main`.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

from app.auth.cli import add_apikey
from app.container import database_migrations
from app.settings import Settings, get_settings
from app.store.db import create_engine
from app.store.migrate import current_revisions, downgrade_database, upgrade_database

Handler = Callable[[argparse.Namespace, Settings], Coroutine[Any, Any, int]]
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


def _add_migrate(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser("migrate", help="bring the database schema up to date (Alembic)")
    target = parser.add_mutually_exclusive_group()
    target.add_argument(
        "--to", default=None, help="revision to upgrade to (default: every branch's head)"
    )
    target.add_argument("--down", metavar="REVISION", help="downgrade to REVISION (e.g. base)")
    target.add_argument("--current", action="store_true", help="print the current revision")
    parser.set_defaults(handler=_migrate)


COMMANDS: list[Callable[[Subparsers], None]] = [_add_migrate, add_apikey]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="chat-bff", description="chat-bff administration")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in COMMANDS:
        add(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    handler: Handler = args.handler
    return asyncio.run(handler(args, get_settings()))


if __name__ == "__main__":
    sys.exit(main())
