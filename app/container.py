"""The service graph: everything a request or a run needs, built once at start-up.

`create_app` builds a `Services` in its lifespan and closes it on shutdown. Tests build
their own with injected providers.
"""

from __future__ import annotations

import logging
import socket
import uuid
from collections.abc import Awaitable, Callable, Collection, Mapping
from contextlib import AbstractAsyncContextManager, nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING

from app.agent.ports import ToolRuntime
from app.auth.authenticator import AuthConfig, Authenticator
from app.auth.stream_tokens import StreamTokens, derive_stream_key
from app.container_tools import (
    build_mcp_sources,
    build_router,
    build_tool_catalog,
    build_tool_runtime,
    database_migrations,
    offer_capabilities,
    start_background,
)
from app.domain.events import FINAL_RUN_STATUSES
from app.domain.models import Catalog, ModelInfo
from app.files.attachments import Attachments
from app.files.service import FileLimits, Files
from app.files.store import DirectoryFileStore
from app.files.sweep import StraySweeper
from app.limits.backends import LimitBackend, MemoryBackend
from app.limits.limiter import Limiter
from app.limits.policy import LimitPolicy, Limits
from app.limits.run_hooks import LimitHooks
from app.observability.instrumented import InstrumentedTools, instrument
from app.observability.metrics import Metrics
from app.observability.run_hooks import ObservabilityHooks
from app.providers.base import Provider
from app.providers.catalog import build_catalog
from app.providers.scripted import ScriptedProvider, load_script
from app.routing.router import ToolRouter
from app.runs.bus import Bus, LocalBus
from app.runs.driver import RunLimits
from app.runs.hooks import AllHooks
from app.runs.journal import RunJournal
from app.runs.manager import RunManager
from app.runs.requests import RunRequests
from app.runs.turns import Runs
from app.runs.typed_answers import TypedAnswers
from app.settings import Settings
from app.store.database import Database
from app.store.db import create_engine
from app.store.migrate import upgrade_on_start
from app.toolruntime.approvals import ApprovalService
from app.toolruntime.background import BackgroundJobs
from app.toolruntime.proposals import ProposalService
from app.tools.catalog import ToolCatalog
from app.usage.book import UsageBook
from app.usage.writer import UsageWriter

if TYPE_CHECKING:
    from app.mcp.sources import McpSources
    from app.redis.outage import RedisOutage
    from app.redis.readiness import RedisReadiness

log = logging.getLogger("chat_bff")


@dataclass
class Services:
    settings: Settings
    catalog: Catalog
    providers: dict[str, Provider]
    db: Database
    tools: ToolRuntime
    tool_catalog: ToolCatalog
    approvals: ApprovalService
    proposals: ProposalService
    runs: Runs
    authenticator: Authenticator
    limits: Limiter
    metrics: Metrics
    bus: Bus
    files: Files
    stray_files: StraySweeper
    attachments: Attachments
    router: ToolRouter
    usage: UsageBook
    background: BackgroundJobs
    mcp: McpSources | None = None
    redis: RedisReadiness | None = None  # what /readyz says of REDIS_URL's Redis, if any

    def provider_for(self, model: ModelInfo) -> Provider:
        return self.providers[model.provider]

    async def aclose(self) -> None:
        await self.background.shutdown(self.settings.shutdown_timeout_seconds)
        await self.runs.manager.shutdown(self.settings.shutdown_timeout_seconds)
        await self.stray_files.aclose()
        await self.usage.aclose()  # the rows the runs booked last, queued for batching
        for provider in self.providers.values():
            await provider.aclose()
        await self.limits.aclose()
        if self.mcp is not None:
            await self.mcp.aclose()
        await self.bus.aclose()
        if self.redis is not None:
            await self.redis.aclose()
        await self.db.dispose()


def build_authenticator(settings: Settings, db: Database) -> Authenticator:
    """Identity settings -> the one authentication check (settings stay in the container)."""
    public_pem = settings.jwt_public_key or (
        settings.jwt_public_key_file.read_text() if settings.jwt_public_key_file else None
    )
    secret = settings.jwt_secret.get_secret_value() if settings.jwt_secret else None
    verifier = None
    if settings.auth_configured:
        # PyJWT and cryptography (9 MB of a worker) only where bearer JWTs are verified.
        from app.auth.jwt import JwtVerifier, load_jwks

        verifier = JwtVerifier(
            secret=secret,
            public_key_pem=public_pem,
            jwks=load_jwks(settings.jwt_jwks_file) if settings.jwt_jwks_file else None,
            issuer=settings.jwt_issuer,
            audience=settings.jwt_audience,
            roles_claim=settings.jwt_roles_claim,
            leeway=settings.jwt_leeway_seconds,
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
        db,
    )


def build_redis_outage(settings: Settings) -> RedisOutage | None:
    """One breaker for the process's Redis (`REDIS_URL`), shared by the limiter and the
    bus: a hang either one noticed spares the other the timeout too."""
    if not settings.redis_url:
        return None
    from app.redis.outage import RedisOutage, public_url

    return RedisOutage(settings.redis_retry_seconds, where=public_url(settings.redis_url))


def build_redis_readiness(
    settings: Settings, outage: RedisOutage | None, bus: Bus
) -> RedisReadiness | None:
    """What `/readyz` says of Redis, from the shared breaker or a PING of its own through
    the bus's connections (the bus PINGs when quiet, so that PING is rarely needed and a
    client of its own, one more connection per process, was kept for nothing); the PING
    waits at most a second (a readiness probe must not hang on Redis)."""
    if not settings.redis_url or outage is None:
        return None
    from app.redis.readiness import RedisReadiness
    from app.runs.redis_bus import RedisBus

    timeout = min(settings.redis_timeout_seconds, 1.0)
    if isinstance(bus, RedisBus):
        return RedisReadiness(outage, bus.ping, timeout=timeout)
    return RedisReadiness.from_url(settings.redis_url, outage, timeout=timeout)


def build_limiter(
    settings: Settings, metrics: Metrics, outage: RedisOutage | None = None
) -> Limiter:
    backend: LimitBackend
    if settings.redis_url:
        from app.limits.redis_backend import RedisBackend

        backend = RedisBackend.from_url(
            settings.redis_url,
            pool_size=settings.redis_pool_size,
            pool_timeout=settings.redis_pool_timeout_seconds,
            timeout=settings.redis_timeout_seconds,
            outage=outage,
        )
    else:
        backend = MemoryBackend()
    policy = LimitPolicy(
        Limits(
            requests_per_minute=settings.rate_limit_requests_per_minute,
            concurrent_runs=settings.rate_limit_concurrent_runs,
            tokens_per_day=settings.rate_limit_tokens_per_day,
            open_streams=settings.rate_limit_open_streams,
        ),
        settings.rate_limit_roles,
    )
    return Limiter(policy, backend, metrics, run_lease_seconds=settings.run_lease_seconds)


def announcer(bus: Bus) -> Callable[[Collection[str]], Awaitable[None]]:
    """Committed changes wake their readers (the conversation's followers) through the bus."""

    async def announce(topics: Collection[str]) -> None:
        for topic in topics:
            await bus.publish(topic, b"changed")

    return announce


def build_bus(settings: Settings, outage: RedisOutage | None = None) -> Bus:
    """Redis pub/sub between instances when `REDIS_URL` is set, else this process alone."""
    if settings.redis_url:
        from app.runs.redis_bus import RedisBus

        return RedisBus.from_url(
            settings.redis_url, timeout=settings.redis_timeout_seconds, outage=outage
        )
    return LocalBus()


def build_providers(settings: Settings, catalog: Catalog) -> dict[str, Provider]:
    """The providers the catalogue needs; provider keys are read here and nowhere else."""
    needed = {m.provider for m in catalog.all()}
    providers: dict[str, Provider] = {}
    if "openai" in needed:
        from app.providers.openai import OpenAIProvider

        key = settings.openai_api_key.get_secret_value() if settings.openai_api_key else None
        providers["openai"] = OpenAIProvider(
            # Local OpenAI-compatible servers (Ollama, vLLM) take any key; the SDK needs one.
            api_key=key or "not-needed",
            base_url=settings.openai_base_url,
            timeout=settings.provider_timeout_seconds,
            connect_timeout=settings.provider_connect_timeout_seconds,
            max_retries=settings.provider_max_retries,
            max_connections=settings.provider_max_connections,
        )
    if "anthropic" in needed:
        from app.providers.anthropic import AnthropicProvider

        if settings.anthropic_api_key is None:
            raise ValueError(
                "the catalogue names an Anthropic model but ANTHROPIC_API_KEY is unset"
            )
        providers["anthropic"] = AnthropicProvider(
            api_key=settings.anthropic_api_key.get_secret_value(),
            base_url=settings.anthropic_base_url,
            timeout=settings.provider_timeout_seconds,
            connect_timeout=settings.provider_connect_timeout_seconds,
            max_retries=settings.provider_max_retries,
            max_connections=settings.provider_max_connections,
        )
    if "scripted" in needed:
        providers["scripted"] = ScriptedProvider(
            load_script(settings.scripted_script), delay_ms=settings.scripted_delay_ms
        )
    return providers


def build_files(settings: Settings, db: Database) -> Files:
    """Uploads: a directory store (`FILES_DIR`) and the limits of files and extraction."""
    return Files(
        db,
        DirectoryFileStore(settings.files_dir),
        FileLimits(
            max_bytes=settings.upload_max_bytes,
            quota_bytes=settings.upload_quota_bytes,
            upload_timeout_seconds=settings.upload_timeout_seconds,
            extract_timeout_seconds=settings.extract_timeout_seconds,
            extract_concurrency=settings.extract_concurrency,
        ),
    )


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
    engine = create_engine(settings.database_url)
    # A database behind the schema is upgraded by a child process while the providers
    # (their SDKs' imports) are built here, on the other core.
    upgrade: AbstractAsyncContextManager[None] = (
        upgrade_on_start(engine, settings.database_url, database_migrations(settings))
        if settings.migrate_on_start
        else nullcontext()
    )
    async with upgrade:
        built = dict(providers) if providers is not None else build_providers(settings, catalog)
    built = instrument(built, metrics)  # latency, TTFT, tokens, errors per model call
    metrics.prepare(
        sorted({(m.provider, m.upstream_model) for m in catalog.all()}), sorted(FINAL_RUN_STATUSES)
    )
    if catalog.offline:
        log.warning(
            "no provider key configured: serving the offline scripted model",
            extra={"model": catalog.default_id},
        )
    db = Database(engine)
    tool_catalog = build_tool_catalog(settings)
    mcp = build_mcp_sources(settings, tool_catalog.registry)
    if mcp is not None:
        await mcp.start()  # each server's first attempt; an unreachable one is left out
        offer_capabilities(settings, tool_catalog.registry)
    tool_runtime, background = build_tool_runtime(settings, tool_catalog, db)
    tools: ToolRuntime = tool_runtime
    redis_outage = build_redis_outage(settings)
    limits = build_limiter(settings, metrics, redis_outage)
    files = build_files(settings, db)
    stray_files = StraySweeper(
        db,
        files.store,
        grace_seconds=settings.files_sweep_grace_seconds,
        interval_seconds=settings.files_sweep_interval_seconds,
    )
    attachments = Attachments(files)
    bus = build_bus(settings, redis_outage)
    db.announce = announcer(bus)
    router = build_router(settings, tool_catalog)
    usage = UsageBook(
        db,
        settings.budget_policy(),
        observe=metrics.usage_recorded,
        writer=UsageWriter(db, interval=settings.usage_write_interval_seconds),
    )
    manager = RunManager(
        journal=RunJournal(db, instance_id=f"{socket.gethostname()}:{uuid.uuid4().hex[:12]}"),
        tools=InstrumentedTools(tools, metrics),  # counts tool calls by tool and outcome
        limits=RunLimits(
            max_iterations=settings.max_iterations, run_timeout=settings.run_timeout_seconds
        ),
        hooks=AllHooks([ObservabilityHooks(metrics), LimitHooks(limits)]),
        lease_seconds=settings.run_lease_seconds,
        attachments=attachments,
        bus=bus,
        router=router,
        usage=usage,
    )
    approvals = ApprovalService(tool_runtime, confirmation_tool=settings.confirmation_tool)
    runs = Runs(
        manager=manager,
        db=db,
        requests=RunRequests(
            catalog,
            built,
            tools,
            failover_after_first_byte=settings.failover_after_first_byte,
        ),
        tools=tools,
        attachments=attachments,
        typed_answers=TypedAnswers(approvals),
    )
    interrupted = await manager.start()
    if interrupted:
        log.warning("closed runs left running by a stopped process", extra={"runs": interrupted})
    services = Services(
        settings=settings,
        catalog=catalog,
        providers=built,
        db=db,
        tools=tools,
        tool_catalog=tool_catalog,
        approvals=approvals,
        proposals=ProposalService(tool_runtime),
        runs=runs,
        authenticator=build_authenticator(settings, db),
        limits=limits,
        metrics=metrics,
        bus=bus,
        files=files,
        stray_files=stray_files,
        attachments=attachments,
        usage=usage,
        background=await start_background(background, runs, db, settings, bus),
        mcp=mcp,
        router=router,
        redis=build_redis_readiness(settings, redis_outage, bus),
    )
    stray_files.start()  # a pass now, then every FILES_SWEEP_INTERVAL_SECONDS
    return services
