"""`chat-bff migrate` brings a database to head from the command line: the core, and the
example graph's branch where the example is on (by default in development)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _cli(tmp_path: Path, *args: str, **extra_env: str) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": os.environ.get("PATH", ""),
        "PYTHONPATH": str(ROOT),
        "DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'cli.db'}",
        **extra_env,
    }
    return subprocess.run(
        [sys.executable, "-m", "app.cli", *args],
        cwd=tmp_path,  # no .env of the developer's
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_migrate_upgrades_the_core_and_the_example_in_development(tmp_path: Path) -> None:
    result = _cli(tmp_path, "migrate")

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "database at 0019_conversation_kind, graph_0001"


def test_migrate_leaves_the_example_out_where_it_is_off(tmp_path: Path) -> None:
    result = _cli(tmp_path, "migrate", EXAMPLE_TOOLS_ENABLED="false")

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "database at 0019_conversation_kind"


def test_migrate_down_to_base_empties_the_schema(tmp_path: Path) -> None:
    _cli(tmp_path, "migrate")
    result = _cli(tmp_path, "migrate", "--down", "base")

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "database at base (empty)"


def test_an_unknown_command_exits_with_usage(tmp_path: Path) -> None:
    result = _cli(tmp_path, "frobnicate")

    assert result.returncode == 2
    assert "usage: chat-bff" in result.stderr
