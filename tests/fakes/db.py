"""Databases and an in-process API client for tests, as a pytest plugin.

Every test that asks for one of the database fixtures below runs twice: on SQLite and on
Postgres, each time with a database made for this test alone.

    database_kind  the parameter: "sqlite" | "postgres". The Postgres variant carries the
                   `postgres` marker, so `-m "not postgres"` runs SQLite only.
    database_url   async SQLAlchemy URL of an EMPTY database (SQLite: a file in tmp_path;
                   Postgres: `CREATE DATABASE chatbff_t_<hex>`, dropped after the test).
                   For tests of migrations themselves.
    migrated_database_url
                   the same, but already at Alembic head, the example graph's tables
                   included (`WITH_EXAMPLE`): a copy of a template migrated once per
                   session (file copy / `CREATE DATABASE ... TEMPLATE`), so a test pays
                   ~50 ms instead of a full migration. On Postgres a copy a test left
                   with the template's schema is emptied and given to a later test
                   instead of being dropped (tests/support/pg_reuse.py).
    postgres_url   an empty Postgres database, unparametrized (Postgres-only tests).
    end_connections(url)
                   a function, not a fixture: ends every backend of that Postgres
                   database (`pg_terminate_backend`), as a server restart would.
    db_engine      an AsyncEngine on `migrated_database_url`.
    db_sessions    an async_sessionmaker on `db_engine` (expire_on_commit=False), e.g.
                   `async with db_sessions.begin() as s: await ConversationRepo(s).create(...)`.
    app_settings   `Settings` on `migrated_database_url`, built without reading `.env` or
                   the environment's provider keys (environment="test", offline catalogue,
                   no scripted pacing). Derive variants with `app_settings.model_copy(
                   update={...})`.
    make_api       async context manager factory: `async with make_api(settings,
                   providers=...) as client` starts an app with its lifespan running and
                   yields an `ApiClient` (an httpx.AsyncClient over ASGITransport, base
                   http://test, with `.app` and `.services`).
    api            `make_api(app_settings)` for the common case.
    api_services   the running app's `Services` (for arranging data behind the API).

Postgres comes from `TEST_POSTGRES_URL` (default
postgresql+asyncpg://postgres@127.0.0.1:5432/test; the fixture connects to it as an admin
to create the per-test databases). When it is unreachable the Postgres variant is skipped
with the reason, unless `CI` is set: then it fails, so CI can never go green without it.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import uuid
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import NoReturn

import asyncpg  # type: ignore[import-untyped]
import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from app.container import Services
from app.main import create_app
from app.providers.base import Provider
from app.settings import Settings
from app.store.db import create_engine, session_factory
from app.store.migrate import Migrations, upgrade_database
from app.tools.modules import migration_dirs
from tests.support import pg_reuse
from tests.support.required import unavailable
from tests.support.session_heap import keep_session_heap_frozen

DEFAULT_POSTGRES_URL = "postgresql+asyncpg://postgres@127.0.0.1:5432/test"
_unreachable: list[str] = []  # reason, remembered after the first failed connection
_templates: dict[str, str] = {}  # kind -> migrated template (Postgres name / SQLite path)
_pg_template: list[pg_reuse.Snapshot] = []  # the Postgres template's state, if reusable
_pg_free: list[str] = []  # copies of the Postgres template reset by the tests before

MakeApi = Callable[..., AbstractAsyncContextManager["ApiClient"]]
# The schema of the migrated template: the core plus the example graph's tables, so tests
# may switch the example on (`example_tools_enabled=True`) over any migrated database.
WITH_EXAMPLE = Migrations(apply=migration_dirs(["app.examples.graph"]))


def _postgres_url() -> str:
    return os.environ.get("TEST_POSTGRES_URL", DEFAULT_POSTGRES_URL)


def _dsn(url: str) -> str:
    """A plain libpq DSN for asyncpg from an SQLAlchemy URL."""
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


def _unavailable(reason: str) -> NoReturn:
    unavailable(f"Postgres not reachable ({reason}); set TEST_POSTGRES_URL to run these")


async def _admin() -> asyncpg.Connection:
    if _unreachable:
        _unavailable(_unreachable[0])
    try:
        return await asyncpg.connect(_dsn(_postgres_url()), timeout=5)
    except (OSError, asyncpg.PostgresError, TimeoutError) as exc:
        _unreachable.append(f"{type(exc).__name__}: {exc}")
        _unavailable(_unreachable[0])
        raise  # unreachable: skip/fail raise


async def end_connections(database_url: str) -> int:
    """End every backend connected to this Postgres database, as a restart of the server
    would, and wait until they are gone; returns how many there were."""
    admin = await _admin()
    try:
        # The backends first, then the ending: Postgres may evaluate a WHERE clause in
        # any order, and this must never end a connection of another database.
        pids = await admin.fetch(
            "SELECT pid FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()",
            make_url(database_url).database,
        )
        ended: int = await admin.fetchval(
            "SELECT count(*) FROM unnest($1::int[]) AS pid WHERE pg_terminate_backend(pid, 5000)",
            [row["pid"] for row in pids],
        )
    finally:
        await admin.close()
    return ended


def _pg_url(name: str) -> str:
    return make_url(_postgres_url()).set(database=name).render_as_string(hide_password=False)


async def _admin_execute(sql: str) -> None:
    admin = await _admin()
    try:
        await admin.execute(sql)
    finally:
        await admin.close()


async def _migrated_template(kind: str, tmp_root: Path) -> str:
    """A database migrated to head once per test session; tests get copies of it, which
    is much faster than migrating each test's database."""
    if kind not in _templates:
        if kind == "postgres":
            name = f"chatbff_tpl_{uuid.uuid4().hex[:16]}"
            await _admin_execute(f'CREATE DATABASE "{name}"')
            _templates[kind] = name
            url = _pg_url(name)
        else:
            path = tmp_root / f"template-{uuid.uuid4().hex[:8]}.db"
            url = f"sqlite+aiosqlite:///{path}"
        engine = create_engine(url)
        try:
            await upgrade_database(engine, WITH_EXAMPLE)
        finally:
            await engine.dispose()  # closes every connection: the template can be copied
        if kind == "sqlite":
            _templates[kind] = str(path)
        else:
            await _remember_template(url)
    return _templates[kind]


async def _remember_template(url: str) -> None:
    conn = await asyncpg.connect(_dsn(url), timeout=5)
    try:
        if await pg_reuse.template_rows(conn) == 0:
            _pg_template.append(await pg_reuse.snapshot(conn))
    finally:
        await conn.close()


async def _reset_for_reuse(url: str) -> bool:
    """Back to the template's state, for a later test (see tests/support/pg_reuse.py)."""
    if not _pg_template:
        return False
    try:
        await end_connections(url)
        conn = await asyncpg.connect(_dsn(url), timeout=5)
        try:
            return await pg_reuse.reset(conn, _pg_template[0])
        finally:
            await conn.close()
    except (OSError, asyncpg.PostgresError, TimeoutError):
        return False


@asynccontextmanager
async def _fresh_database(
    kind: str, tmp_path: Path, *, template_root: Path | None = None
) -> AsyncIterator[str]:
    """An empty database, or a copy of the migrated template when `template_root` is set."""
    if kind == "sqlite":
        path = tmp_path / f"chat-bff-{uuid.uuid4().hex[:8]}.db"
        if template_root is not None:
            shutil.copyfile(await _migrated_template(kind, template_root), path)
        yield f"sqlite+aiosqlite:///{path}"
        return
    template = await _migrated_template(kind, tmp_path) if template_root else None
    if template and _pg_free:
        name = _pg_free.pop()
    else:
        name = f"chatbff_t_{uuid.uuid4().hex[:16]}"
        clause = f' TEMPLATE "{template}"' if template else ""
        await _admin_execute(f'CREATE DATABASE "{name}"{clause}')
    try:
        yield _pg_url(name)
    finally:
        if template and await _reset_for_reuse(_pg_url(name)):
            _pg_free.append(name)
        else:
            await _admin_execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def database_kind(request: pytest.FixtureRequest) -> str:
    kind: str = request.param
    return kind


@pytest.fixture
async def database_url(database_kind: str, tmp_path: Path) -> AsyncIterator[str]:
    async with _fresh_database(database_kind, tmp_path) as url:
        yield url


@pytest.fixture
async def migrated_database_url(
    database_kind: str, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[str]:
    root = tmp_path_factory.getbasetemp()
    async with _fresh_database(database_kind, tmp_path, template_root=root) as url:
        yield url


@pytest.fixture
async def postgres_url(tmp_path: Path) -> AsyncIterator[str]:
    async with _fresh_database("postgres", tmp_path) as url:
        yield url


@pytest.fixture
async def db_engine(migrated_database_url: str) -> AsyncIterator[AsyncEngine]:
    engine = create_engine(migrated_database_url)
    try:
        yield engine
    finally:
        await engine.dispose()


@pytest.fixture
def db_sessions(db_engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    return session_factory(db_engine)


@pytest.fixture
def app_settings(migrated_database_url: str, tmp_path: Path) -> Settings:
    return Settings(
        _env_file=None,
        database_url=migrated_database_url,
        files_dir=tmp_path / "files",
        environment="test",
        log_json=False,
        scripted_delay_ms=0,
    )


class ApiClient(httpx.AsyncClient):
    """An httpx client wired to an in-process app; `.services` is its running graph."""

    def __init__(self, app: FastAPI) -> None:
        super().__init__(transport=httpx.ASGITransport(app=app), base_url="http://test")
        self.app = app

    @property
    def services(self) -> Services:
        services: Services = self.app.state.services
        return services


@pytest.fixture
def make_api() -> MakeApi:
    @asynccontextmanager
    async def start(
        settings: Settings, *, providers: Mapping[str, Provider] | None = None
    ) -> AsyncIterator[ApiClient]:
        app = create_app(settings, providers=providers)
        with keep_session_heap_frozen():
            async with app.router.lifespan_context(app), ApiClient(app) as client:
                yield client

    return start


@pytest.fixture
async def api(make_api: MakeApi, app_settings: Settings) -> AsyncIterator[ApiClient]:
    async with make_api(app_settings) as client:
        yield client


@pytest.fixture
def api_services(api: ApiClient) -> Services:
    return api.services


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Drop the session's Postgres template database and the copies kept for reuse."""
    names = [*_pg_free, *filter(None, [_templates.pop("postgres", None)])]
    _pg_free.clear()
    for name in names:
        asyncio.run(_admin_execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
