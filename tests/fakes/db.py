"""Databases and an in-process API client for tests, as a pytest plugin.

Every test that asks for `database_url` (directly or through the fixtures below) runs
twice: on a fresh SQLite file and on a fresh Postgres database.

    database_url   parametrized "sqlite" | "postgres": the async SQLAlchemy URL of an empty
                   database made for this test alone (SQLite: a file in tmp_path;
                   Postgres: `CREATE DATABASE chatbff_t_<hex>`, dropped after the test,
                   about 60 ms). The Postgres variant carries the `postgres` marker, so
                   `-m "not postgres"` runs SQLite only.
    postgres_url   the same fresh Postgres database, unparametrized (Postgres-only tests).
    db_engine      an AsyncEngine on that database, migrated to head (Alembic).
    db_sessions    an async_sessionmaker on `db_engine` (expire_on_commit=False), e.g.
                   `async with db_sessions.begin() as s: await ConversationRepo(s).create(...)`.
    app_settings   `Settings` for that database, built without reading `.env` or the
                   environment's provider keys (environment="test", offline catalogue).
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

import os
import uuid
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path

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
from app.store.migrate import upgrade_database

DEFAULT_POSTGRES_URL = "postgresql+asyncpg://postgres@127.0.0.1:5432/test"
_unreachable: list[str] = []  # reason, remembered after the first failed connection

MakeApi = Callable[..., AbstractAsyncContextManager["ApiClient"]]


def _postgres_url() -> str:
    return os.environ.get("TEST_POSTGRES_URL", DEFAULT_POSTGRES_URL)


def _dsn(url: str) -> str:
    """A plain libpq DSN for asyncpg from an SQLAlchemy URL."""
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


def _unavailable(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"Postgres is required in CI: {reason}")
    pytest.skip(f"Postgres not reachable ({reason}); set TEST_POSTGRES_URL to run these")


async def _admin() -> asyncpg.Connection:
    if _unreachable:
        _unavailable(_unreachable[0])
    try:
        return await asyncpg.connect(_dsn(_postgres_url()), timeout=5)
    except (OSError, asyncpg.PostgresError, TimeoutError) as exc:
        _unreachable.append(f"{type(exc).__name__}: {exc}")
        _unavailable(_unreachable[0])
        raise  # unreachable: skip/fail raise


@asynccontextmanager
async def _fresh_postgres() -> AsyncIterator[str]:
    name = f"chatbff_t_{uuid.uuid4().hex[:16]}"
    admin = await _admin()
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
    finally:
        await admin.close()
    try:
        yield make_url(_postgres_url()).set(database=name).render_as_string(hide_password=False)
    finally:
        admin = await _admin()
        try:
            await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            await admin.close()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    if request.param == "sqlite":
        yield f"sqlite+aiosqlite:///{tmp_path / 'chat-bff.db'}"
        return
    async with _fresh_postgres() as url:
        yield url


@pytest.fixture
async def postgres_url() -> AsyncIterator[str]:
    """A fresh, empty Postgres database only (for Postgres-specific behaviour)."""
    async with _fresh_postgres() as url:
        yield url


@pytest.fixture
async def db_engine(database_url: str) -> AsyncIterator[AsyncEngine]:
    engine = create_engine(database_url)
    try:
        await upgrade_database(engine)
        yield engine
    finally:
        await engine.dispose()


@pytest.fixture
def db_sessions(db_engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    return session_factory(db_engine)


@pytest.fixture
def app_settings(database_url: str) -> Settings:
    return Settings(
        _env_file=None,
        database_url=database_url,
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
