"""The start-up's migration in a process of its own (`app.store.migrate.upgrade_on_start`).

Reads `{"url", "apply", "known"}` as JSON on stdin, runs `upgrade_database` on an engine
of its own and exits: Alembic's modules and the revision scripts never enter the worker.
Alembic's log lines go to stderr, which the worker relays into its own log.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from pathlib import Path
from typing import Any

from app.store.db import create_engine
from app.store.migrate import Migrations, upgrade_database


async def _upgrade(order: dict[str, Any]) -> None:
    engine = create_engine(order["url"])
    migrations = Migrations(
        apply=tuple(Path(p) for p in order["apply"]),
        known=tuple(Path(p) for p in order["known"]),
    )
    try:
        await upgrade_database(engine, migrations)
    finally:
        await engine.dispose()


def main() -> None:
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    asyncio.run(_upgrade(json.load(sys.stdin)))


if __name__ == "__main__":
    main()
