"""`chat-bff` command line: `chat-bff migrate`, and room for more subcommands.

    chat-bff migrate                 # Alembic upgrade: the core and the tool modules on
    chat-bff migrate --to 0001_core  # or to a given revision
    chat-bff migrate --down base     # downgrade (rollback of a bad release)
    chat-bff migrate --current       # print the revision the database is at

Adding a subcommand: a module here with `add_<name>(subparsers)` that adds a parser and sets
`handler=` to an `async def (args, settings) -> int`, then list it in `COMMANDS`. Settings
come from the environment (`DATABASE_URL`, ...) through `settings_or_exit()`, once, in `main`
(a configuration error prints one line per problem and exits 78).
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

from app.cli.apikeys import add_apikey
from app.cli.migrate import add_migrate
from app.settings import Settings, settings_or_exit

Handler = Callable[[argparse.Namespace, Settings], Coroutine[Any, Any, int]]
Subparsers = Any  # argparse's _SubParsersAction is private


COMMANDS: list[Callable[[Subparsers], None]] = [add_migrate, add_apikey]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="chat-bff", description="chat-bff administration")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in COMMANDS:
        add(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    handler: Handler = args.handler
    return asyncio.run(handler(args, settings_or_exit()))
