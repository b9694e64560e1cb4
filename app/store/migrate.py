"""Bring a database to the newest schema: Alembic, run in-process.

A schema is the core plus the tables of the tool packages a deployment switches on:

    migrations/versions/          the core's revisions (0001_core ..., branch label `core`)
    <tool package>/migrations/    a tool package's own revisions: its own branch label, its
                                  first revision a new root (`down_revision = None`), e.g.
                                  the example graph's `app/examples/graph/migrations/`

`Migrations` names those directories: `apply` the ones brought to head with the core (the
packages switched on), `known` the ones merely known (switched off now, but a database may
have run them before: Alembic must resolve every revision a database records, or it
refuses to migrate at all). So switching a tool package off never fails a start-up and
never drops its tables; a fresh database gets only what is switched on.

`upgrade_database(engine, migrations)` is what `chat-bff migrate` calls; the container
decides the `Migrations` from settings. It runs Alembic on a connection of the service's
own engine, so the URL, driver and SQLite pragmas are the service's. On Postgres a
session-level advisory lock serialises concurrent starters: with several workers booting
at once, one migrates and the others wait, then find the database at head and do nothing.

Start-up (`MIGRATE_ON_START`) calls `upgrade_on_start`, which keeps Alembic out of the
worker: Alembic, Mako and the revision scripts are about 19 MB of heap that a process
keeps once it has run them. A database at head (the usual start) is read with one query
against the heads of the revision files (read as text, `script_heads`; by Alembic only
where a file computes an id); one behind is upgraded by `upgrade_database` in a child
process (`app.store.migrate_child`) while the rest of start-up goes on (the database is
a file or a server: `create_engine` takes no in-memory SQLite).

The core scripts live in `migrations/` at the repository root (`alembic.ini` there serves
the `alembic` command line for authoring new revisions); a built wheel carries them inside
the package as `app/migrations`, so `chat-bff migrate` works wherever it is installed.
Tool packages carry their own `migrations/` package, so they ship with their code.
"""

from __future__ import annotations

import ast
import asyncio
import importlib
import json
import logging
import os
import pkgutil
import re
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from sqlalchemy import MetaData, text
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from app.store.db import Base

if TYPE_CHECKING:
    from alembic.config import Config
    from alembic.script import ScriptDirectory

log = logging.getLogger("alembic.runtime.migration")

# Inside the package when it is installed from a wheel (setup.py maps the repository's
# `migrations/` to `app/migrations`); beside the package in a checkout. Never the working
# directory: a service must not run whatever scripts happen to lie where it was started.
_PACKAGE = Path(__file__).resolve().parents[1]
MIGRATIONS_CANDIDATES = (_PACKAGE / "migrations", _PACKAGE.parent / "migrations")
# pg_advisory_lock key: "chatbff" + "\x01" as a big-endian 64-bit integer.
MIGRATION_LOCK_KEY = int.from_bytes(b"chatbff\x01", "big")


@dataclass(frozen=True)
class Migrations:
    """Which tool packages' revision directories a database follows besides the core."""

    apply: tuple[Path, ...] = ()  # switched on: brought to head with the core
    known: tuple[Path, ...] = ()  # switched off: resolvable, never upgraded


CORE_ONLY = Migrations()


def target_metadata() -> MetaData:
    """The core's tables, as Alembic's autogenerate and the schema test see them.

    Every module of the `app.store.tables` package is imported here, so that what it
    declares on `Base` is registered. Tool packages keep their tables on metadata of
    their own, so importing one never adds its tables to the core's.
    """
    import app.store.tables as tables

    for module in pkgutil.iter_modules(tables.__path__, prefix="app.store.tables."):
        importlib.import_module(module.name)
    return Base.metadata


def migrations_dir() -> Path:
    for candidate in MIGRATIONS_CANDIDATES:
        if (candidate / "env.py").is_file():
            return candidate.resolve()
    tried = ", ".join(str(c) for c in MIGRATIONS_CANDIDATES)
    raise RuntimeError(f"Alembic migrations not found (looked in {tried})")


def _locations(migrations: Migrations) -> list[Path]:
    found = [migrations_dir() / "versions", *migrations.apply, *migrations.known]
    return list(dict.fromkeys(p.resolve() for p in found))


def alembic_config(migrations: Migrations = CORE_ONLY) -> Config:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(migrations_dir()))
    config.set_main_option("path_separator", "newline")
    config.set_main_option("version_locations", "\n".join(str(p) for p in _locations(migrations)))
    return config


def head_revisions(migrations: Migrations = CORE_ONLY) -> tuple[str, ...]:
    """The revisions an up-to-date database records: the core's head and the head of
    each applied directory (sorted)."""
    from alembic.script import ScriptDirectory

    script = ScriptDirectory.from_config(alembic_config(migrations))
    wanted = {(migrations_dir() / "versions").resolve(), *(p.resolve() for p in migrations.apply)}
    heads = [head for head in script.get_heads() if _directory(script, head) in wanted]
    return tuple(sorted(heads))


def _directory(script: ScriptDirectory, revision: str) -> Path | None:
    found = script.get_revision(revision)
    return Path(found.path).resolve().parent if found is not None else None


def _run(
    connection: Connection,
    action: Literal["upgrade", "downgrade"],
    revisions: Sequence[str],
    migrations: Migrations,
) -> None:
    from alembic import command

    config = alembic_config(migrations)
    config.attributes["connection"] = connection
    for revision in revisions:
        if action == "upgrade":
            command.upgrade(config, revision)
        else:
            command.downgrade(config, revision)


async def _migrate(
    engine: AsyncEngine,
    action: Literal["upgrade", "downgrade"],
    revisions: Sequence[str],
    migrations: Migrations,
) -> None:
    async with engine.connect() as conn:
        locked = conn.dialect.name == "postgresql"
        if locked:
            await conn.execute(text("SELECT pg_advisory_lock(:key)"), {"key": MIGRATION_LOCK_KEY})
            await conn.commit()
        try:
            await conn.run_sync(_run, action, revisions, migrations)
            await conn.commit()
        finally:
            if locked:
                await _unlock(conn)


async def _unlock(conn: AsyncConnection) -> None:
    if conn.in_transaction():
        await conn.rollback()
    await conn.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": MIGRATION_LOCK_KEY})
    await conn.commit()


async def upgrade_database(
    engine: AsyncEngine,
    migrations: Migrations = CORE_ONLY,
    *,
    revision: str | None = None,
) -> None:
    """Alembic `upgrade`: the core and every applied directory to its head, or to
    `revision` when given; safe to run concurrently."""
    targets = (revision,) if revision is not None else head_revisions(migrations)
    await _migrate(engine, "upgrade", targets, migrations)


async def downgrade_database(
    engine: AsyncEngine,
    migrations: Migrations = CORE_ONLY,
    *,
    revision: str = "base",
) -> None:
    """Alembic `downgrade` to `revision` (an empty schema by default); for tests and
    rollbacks of a bad release."""
    await _migrate(engine, "downgrade", (revision,), migrations)


async def current_revisions(engine: AsyncEngine) -> tuple[str, ...]:
    """The revisions the database records (sorted), empty when it was never migrated."""

    from alembic.runtime.migration import MigrationContext

    def read(connection: Connection) -> tuple[str, ...]:
        return tuple(sorted(MigrationContext.configure(connection).get_current_heads()))

    async with engine.connect() as conn:
        return await conn.run_sync(read)


# The files Alembic reads as revisions (its own pattern, `alembic.script.base`).
_REVISION_FILE = re.compile(r"(?!\.\#|__init__)(.*\.py)$")


def script_heads(migrations: Migrations = CORE_ONLY) -> tuple[str, ...]:
    """`head_revisions` without importing Alembic: each revision file's `revision` and
    `down_revision` assignments read as text. A head is a revision no other revision
    names as its `down_revision`, as in Alembic's `get_heads()`.

    Alembic imports each file, so an id may be computed (`revision = PREFIX + "0001"`);
    when a file does not state both as literals, Alembic's own reading decides (imported
    then, and only then)."""
    wanted = {(migrations_dir() / "versions").resolve(), *(p.resolve() for p in migrations.apply)}
    where: dict[str, Path] = {}
    below: set[str] = set()
    for directory in _locations(migrations):
        for path in sorted(directory.glob("*.py")):
            if not _REVISION_FILE.match(path.name):
                continue
            ids = _literal_ids(path)
            if ids is None:
                return head_revisions(migrations)
            revision, down = ids
            where[revision] = directory
            below.update(down)
    return tuple(sorted(r for r, d in where.items() if r not in below and d in wanted))


def _literal_ids(path: Path) -> tuple[str, tuple[str, ...]] | None:
    """The file's `revision` and the revisions its `down_revision` names, when the module
    assigns both as literals; None otherwise."""
    names = _assignments(path)
    revision = names.get("revision")
    if not isinstance(revision, str) or "down_revision" not in names:
        return None
    down = names["down_revision"]
    below = (down,) if isinstance(down, str) else () if down is None else down
    if not isinstance(below, tuple | list) or not all(isinstance(d, str) for d in below):
        return None
    return revision, tuple(below)


def _assignments(path: Path) -> dict[str, Any]:
    """The literal values of the module's own `revision` and `down_revision` assignments;
    one that is not a literal is left out."""
    found: dict[str, Any] = {}
    try:
        body = ast.parse(path.read_text(encoding="utf-8")).body
    except SyntaxError:
        return found
    for node in body:
        targets: list[ast.expr]
        if isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        elif isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        else:
            continue
        for target in targets:
            if isinstance(target, ast.Name) and target.id in {"revision", "down_revision"}:
                try:
                    found[target.id] = ast.literal_eval(value)
                except ValueError:
                    found.pop(target.id, None)
    return found


async def recorded_revisions(engine: AsyncEngine) -> set[str]:
    """The revisions `alembic_version` records, read with plain SQL (empty without the
    table): `current_revisions` without Alembic."""
    async with engine.connect() as conn:
        if conn.dialect.name == "postgresql":
            found = await conn.scalar(text("SELECT to_regclass('alembic_version') IS NOT NULL"))
        else:
            found = await conn.scalar(
                text(
                    "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'alembic_version'"
                )
            )
        if not found:
            return set()
        return set((await conn.scalars(text("SELECT version_num FROM alembic_version"))).all())


@asynccontextmanager
async def upgrade_on_start(
    engine: AsyncEngine, url: str, migrations: Migrations
) -> AsyncIterator[None]:
    """Bring the database to head at start-up without Alembic entering this process's
    memory (see the module's docstring). A child process upgrades while the body runs
    (other start-up work, on another core); leaving the body waits for it."""
    if set(script_heads(migrations)) <= await recorded_revisions(engine):
        yield
        return
    child = await _spawn(url, migrations)
    try:
        yield
        assert child.stderr is not None
        err = await child.stderr.read()
        await child.wait()
    finally:
        if child.returncode is None:
            child.kill()
            await child.wait()
    lines = err.decode(errors="replace").splitlines()
    if child.returncode != 0:
        tail = "\n".join(lines[-30:])
        raise RuntimeError(f"database migration failed (exit {child.returncode}):\n{tail}")
    for line in lines:  # Alembic's own lines ("Running upgrade ..."), in this log
        if line.strip():
            log.info(line)
    # Connections opened before the schema changed hold nothing worth keeping.
    await engine.dispose()


async def _spawn(url: str, migrations: Migrations) -> asyncio.subprocess.Process:
    order = {
        "url": url,
        "apply": [str(p) for p in migrations.apply],
        "known": [str(p) for p in migrations.known],
    }
    env = dict(os.environ)
    # This checkout's `app`, whatever else the interpreter would find first.
    root = str(_PACKAGE.parent)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "app.store.migrate_child",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )
    assert child.stdin is not None
    # The URL travels on stdin: a command line is readable by every local user.
    child.stdin.write(json.dumps(order).encode())
    await child.stdin.drain()
    child.stdin.close()
    return child
