"""Tool modules as packages: a deployment that leaves the example off carries none of it
(never imported, no tables migrated); one that turns it on migrates its own branch."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from app.container_tools import database_migrations
from app.settings import Settings
from app.tools.modules import migration_dirs

ROOT = Path(__file__).resolve().parents[3]


def _settings(**values: Any) -> Settings:
    return Settings(_env_file=None, **values)


def test_the_example_tables_are_migrated_only_where_it_is_on() -> None:
    graph = migration_dirs(["app.examples.graph"])

    on = database_migrations(_settings(environment="development"))
    off = database_migrations(_settings(environment="test"))

    assert graph and on.apply == graph
    assert off.apply == () and off.known == graph


def test_tool_modules_without_tables_have_no_migrations() -> None:
    assert migration_dirs(["tests.unit.tools.deployer_tools", "app.tools"]) == ()


def test_a_service_with_the_example_off_never_imports_it(tmp_path: Path) -> None:
    script = """
import asyncio, sys
from app.main import create_app
from app.settings import Settings

settings = Settings(_env_file=None, environment="test", database_url=sys.argv[1])
app = create_app(settings)

async def start() -> None:
    async with app.router.lifespan_context(app):
        pass

asyncio.run(start())
loaded = sorted(m for m in sys.modules if m.startswith("app.examples.graph"))
print(loaded)
"""
    url = f"sqlite+aiosqlite:///{tmp_path / 'off.db'}"
    result = subprocess.run(
        [sys.executable, "-c", script, url],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "[]"
