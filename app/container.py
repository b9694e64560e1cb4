"""The service graph: everything a request or a run needs, built once at start-up.

`create_app` builds a `Services` in its lifespan and closes it on shutdown. Tests build
their own with injected providers.
"""

from __future__ import annotations

import logging
import socket
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from app.agent.ports import ToolRuntime
from app.auth.authenticator import AuthConfig, Authenticator
from app.auth.jwt import JwtVerifier, load_jwks
from app.auth.stream_tokens import StreamTokens, derive_stream_key
from app.domain.identity import Caller
from app.domain.models import Catalog, ModelInfo
from app.limits.backends import LimitBackend, MemoryBackend
from app.limits.limiter import Limiter
from app.limits.policy import LimitPolicy, Limits
from app.limits.run_hooks import LimitHooks
from app.observability.instrumented import InstrumentedTools, instrument
from app.observability.metrics import Metrics
from app.observability.run_hooks import ObservabilityHooks
from app.providers.base import Provider
from app.providers.catalog import build_catalog
from app.providers.factory import build_providers
from app.runs.driver import RunLimits
from app.runs.hooks import AllHooks
from app.runs.journal import RunJournal
from app.runs.manager import RunManager
from app.runs.requests import RunRequests
from app.runs.turns import Runs
from app.settings import Settings
from app.store.database import Database
from app.store.db import create_engine
from app.store.migrate import upgrade_database
from app.tools.runtime import build_tool_runtime

if TYPE_CHECKING:
    from starlette.requests import HTTPConnection

log = logging.getLogger("chat_bff")


@dataclass
class Services:
    settings: Settings
    catalog: Catalog
    providers: dict[str, Provider]
    db: Database
    tools: ToolRuntime
    runs: Runs
    authenticator: Authenticator
    limits: Limiter
    metrics: Metrics

    @property
    def engine(self) -> AsyncEngine:
        return self.db.engine

    @property
    def sessions(self) -> async_sessionmaker[AsyncSession]:
        return self.db.sessions

    def provider_for(self, model: ModelInfo) -> Provider:
        return self.providers[model.provider]

    async def authenticate(self, conn: HTTPConnection) -> Caller:
        return await self.authenticator.authenticate(conn)

    async def aclose(self) -> None:
        await self.runs.manager.shutdown(self.settings.shutdown_timeout_seconds)
        for provider in self.providers.values():
            await provider.aclose()
        await self.limits.aclose()
        await self.db.dispose()


def build_authenticator(
    settings: Settings, sessions: async_sessionmaker[AsyncSession]
) -> Authenticator:
    """Identity settings -> the one authentication check (settings stay in the container)."""
    public_pem = settings.jwt_public_key or (
        settings.jwt_public_key_file.read_text() if settings.jwt_public_key_file else None
    )
    secret = settings.jwt_secret.get_secret_value() if settings.jwt_secret else None
    verifier = (
        JwtVerifier(
            secret=secret,
            public_key_pem=public_pem,
            jwks=load_jwks(settings.jwt_jwks_file) if settings.jwt_jwks_file else None,
            issuer=settings.jwt_issuer,
            audience=settings.jwt_audience,
            roles_claim=settings.jwt_roles_claim,
            leeway=settings.jwt_leeway_seconds,
        )
        if settings.auth_configured
        else None
    )
    explicit = settings.stream_token_secret
    key, stable = derive_stream_key(secret, explicit.get_secret_value() if explicit else None)
    if not stable and verifier is not None:
        log.warning(
            "STREAM_TOKEN_SECRET is unset and there is no JWT_SECRET to derive it from: "
            "stream tokens are signed with a per-process key and work on this instance only"
        )
    return Authenticator(
        AuthConfig(
            jwt=verifier,
            stream_tokens=StreamTokens(key, ttl_seconds=settings.stream_token_ttl_seconds),
            local_user_id=settings.local_user_id,
            development=verifier is None and settings.environment != "production",
        ),
        sessions,
    )


def build_limiter(settings: Settings, metrics: Metrics) -> Limiter:
    backend: LimitBackend
    if settings.redis_url:
        from app.limits.redis_backend import RedisBackend

        backend = RedisBackend.from_url(
            settings.redis_url,
            pool_size=settings.redis_pool_size,
            pool_timeout=settings.redis_pool_timeout_seconds,
            timeout=settings.redis_timeout_seconds,
        )
    else:
        backend = MemoryBackend()
    policy = LimitPolicy(
        Limits(
            requests_per_minute=settings.rate_limit_requests_per_minute,
            concurrent_runs=settings.rate_limit_concurrent_runs,
            tokens_per_day=settings.rate_limit_tokens_per_day,
        ),
        settings.rate_limit_roles,
    )
    return Limiter(policy, backend, metrics, run_lease_seconds=settings.run_lease_seconds)


def catalog_from_settings(settings: Settings) -> Catalog:
    return build_catalog(settings.catalogue_models(), settings.default_model)


async def build_services(
    settings: Settings,
    *,
    providers: Mapping[str, Provider] | None = None,
    metrics: Metrics | None = None,
) -> Services:
    metrics = metrics or Metrics()
    catalog = catalog_from_settings(settings)
    built = dict(providers) if providers is not None else build_providers(settings, catalog)
    built = instrument(built, metrics)  # latency, TTFT, tokens, errors per model call
    if catalog.offline:
        log.warning(
            "no provider key configured: serving the offline scripted model",
            extra={"model": catalog.default_id},
        )
    engine = create_engine(settings.database_url)
    if settings.migrate_on_start:
        await upgrade_database(engine)
    db = Database(engine)
    sessions = db.sessions
    tools: ToolRuntime = build_tool_runtime(settings, sessions)
    limits = build_limiter(settings, metrics)
    manager = RunManager(
        journal=RunJournal(db, instance_id=f"{socket.gethostname()}:{uuid.uuid4().hex[:12]}"),
        tools=InstrumentedTools(tools, metrics),  # counts tool calls by tool and outcome
        limits=RunLimits(
            max_iterations=settings.max_iterations, run_timeout=settings.run_timeout_seconds
        ),
        hooks=AllHooks([ObservabilityHooks(metrics), LimitHooks(limits)]),
        lease_seconds=settings.run_lease_seconds,
    )
    runs = Runs(manager=manager, db=db, requests=RunRequests(catalog, built, tools), tools=tools)
    interrupted = await manager.start()
    if interrupted:
        log.warning("closed runs left running by a stopped process", extra={"runs": interrupted})
    return Services(
        settings=settings,
        catalog=catalog,
        providers=built,
        db=db,
        tools=tools,
        runs=runs,
        authenticator=build_authenticator(settings, sessions),
        limits=limits,
        metrics=metrics,
    )
