"""A plain wheel install, outside the checkout, carries and finds its migrations."""

from __future__ import annotations

import shutil
import signal
import sqlite3
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from app.examples.graph.tables import GraphBase
from app.store.migrate import head_revisions, target_metadata
from tests.fakes.db import WITH_EXAMPLE
from tests.packaging.support import REPO, borrowing_venv, clean_env, free_port, wait_healthy

pytestmark = pytest.mark.e2e

SOURCES = ("pyproject.toml", "setup.py", "README.md", "app", "migrations")
WHERE_MIGRATIONS_ARE = "import app.store.migrate as m; print(m.migrations_dir())"


def pip(args: list[str]) -> None:
    """The test venv's pip, offline: no index, no build isolation (nothing to download)."""
    command = [sys.executable, "-m", "pip", "-q", "--disable-pip-version-check", *args]
    result = subprocess.run(command, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`pip wheel --no-deps` of a copy of the sources (the checkout stays untouched)."""
    work = tmp_path_factory.mktemp("wheel")
    source = work / "source"
    source.mkdir()
    for name in SOURCES:
        path = REPO / name
        if path.is_dir():
            shutil.copytree(path, source / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(path, source / name)
    pip(["wheel", "--no-deps", "--no-build-isolation", "-w", str(work / "dist"), str(source)])
    [built] = (work / "dist").glob("chat_bff-*.whl")
    return built


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the wheel installed, its dependencies borrowed; its bin folder."""
    python = borrowing_venv(tmp_path_factory.mktemp("venv") / "venv")
    pip(["--python", str(python), "install", "--no-deps", "--no-index", str(wheel)])
    return python.parent


def tables_in(db: Path) -> set[str]:
    with sqlite3.connect(db) as conn:
        return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}


def revisions_of(db: Path) -> tuple[str, ...]:
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT version_num FROM alembic_version").fetchall()
        return tuple(sorted(str(r[0]) for r in rows))


def expected_tables() -> set[str]:
    return {*target_metadata().tables, "alembic_version"}


def test_the_wheel_carries_every_migration_script(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    scripts = {
        f"app/{path.relative_to(REPO).as_posix()}"
        for path in (REPO / "migrations").rglob("*")
        if path.is_file() and path.suffix in {".py", ".mako"} and "__pycache__" not in path.parts
    }
    assert "app/migrations/env.py" in scripts
    assert scripts <= names


def test_the_wheel_carries_the_example_graphs_own_migrations(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())

    assert "app/examples/graph/migrations/graph_0001.py" in names


def test_the_installed_package_uses_its_own_migrations(installed: Path, tmp_path: Path) -> None:
    found = subprocess.run(
        [str(installed / "python"), "-c", WHERE_MIGRATIONS_ARE],
        cwd=tmp_path,
        env=clean_env(),
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    assert Path(found).is_relative_to(installed.parent)


def test_chat_bff_migrate_from_the_wheel_creates_the_schema(
    installed: Path, tmp_path: Path
) -> None:
    db = tmp_path / "migrated.db"
    result = subprocess.run(
        [str(installed / "chat-bff"), "migrate"],
        cwd=tmp_path,
        env=clean_env(DATABASE_URL=f"sqlite+aiosqlite:///{db}"),
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert tables_in(db) == expected_tables()
    assert revisions_of(db) == head_revisions()


def test_chat_bff_migrate_from_the_wheel_adds_the_example_where_it_is_on(
    installed: Path, tmp_path: Path
) -> None:
    db = tmp_path / "example.db"
    result = subprocess.run(
        [str(installed / "chat-bff"), "migrate"],
        cwd=tmp_path,
        env=clean_env(DATABASE_URL=f"sqlite+aiosqlite:///{db}", EXAMPLE_TOOLS_ENABLED="true"),
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert tables_in(db) == expected_tables() | set(GraphBase.metadata.tables)
    assert revisions_of(db) == head_revisions(WITH_EXAMPLE)


def test_the_installed_service_migrates_on_start(installed: Path, tmp_path: Path) -> None:
    db, port, log = tmp_path / "started.db", free_port(), tmp_path / "serve.log"
    env = clean_env(DATABASE_URL=f"sqlite+aiosqlite:///{db}", MIGRATE_ON_START="true")
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [str(installed / "python"), "-m", "uvicorn", "app.main:app", "--port", str(port)],
            cwd=tmp_path,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        wait_healthy(port, proc, log)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(15)
    assert tables_in(db) == expected_tables()
    assert revisions_of(db) == head_revisions()
