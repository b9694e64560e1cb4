"""The service graph: everything a request or a run needs, built once at start-up.

`create_app` builds a `Services` in its lifespan and closes it on shutdown. Tests build
their own with injected providers.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from app.agent.ports import NoTools, ToolRuntime
from app.domain.identity import Caller
from app.providers.base import Provider
from app.providers.catalog import Catalog, ModelInfo, build_catalog
from app.providers.factory import build_providers
from app.runs.manager import RunManager
from app.runs.store import RunStore
from app.settings import Settings
from app.store.db import create_engine, session_factory
from app.store.migrate import upgrade_database

if TYPE_CHECKING:
    from starlette.requests import HTTPConnection

log = logging.getLogger("chat_bff")


@dataclass
class Services:
    settings: Settings
    catalog: Catalog
    providers: dict[str, Provider]
    engine: AsyncEngine
    sessions: async_sessionmaker[AsyncSession]
    tools: ToolRuntime
    runs: RunManager
    extras: dict[str, object] = field(default_factory=dict)

    def provider_for(self, model: ModelInfo) -> Provider:
        return self.providers[model.provider]

    async def authenticate(self, conn: HTTPConnection) -> Caller:
        return Caller(user_id=self.settings.local_user_id, roles=frozenset({"user", "admin"}))

    async def aclose(self) -> None:
        await self.runs.shutdown(self.settings.shutdown_timeout_seconds)
        for provider in self.providers.values():
            await provider.aclose()
        await self.engine.dispose()


async def build_services(
    settings: Settings, *, providers: Mapping[str, Provider] | None = None
) -> Services:
    catalog = build_catalog(settings)
    built = dict(providers) if providers is not None else build_providers(settings, catalog)
    if catalog.offline:
        log.warning(
            "no provider key configured: serving the offline scripted model",
            extra={"model": catalog.default_id},
        )
    engine = create_engine(settings.database_url)
    if settings.migrate_on_start:
        await upgrade_database(engine)
    sessions = session_factory(engine)
    tools: ToolRuntime = NoTools()
    runs = RunManager(
        store=RunStore(sessions),
        tools=tools,
        max_iterations=settings.max_iterations,
        run_timeout=settings.run_timeout_seconds,
    )
    interrupted = await runs.recover()
    if interrupted:
        log.warning("closed runs left running by a stopped process", extra={"runs": interrupted})
    return Services(
        settings=settings,
        catalog=catalog,
        providers=built,
        engine=engine,
        sessions=sessions,
        tools=tools,
        runs=runs,
    )
