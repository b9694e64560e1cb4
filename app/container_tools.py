"""The composition of the tools: which tool modules load, the catalogue and its access
rules, MCP servers as tool sources, the tool router, and the server tool runtime (identity
forwarding, approvals' expiry, and the background jobs that `long_running` calls become).
A part of the composition root (`app.container`), kept in a module of its own so each
stays one readable page."""

from __future__ import annotations

import logging
import os
import socket
import uuid
from typing import TYPE_CHECKING

from app.auth.forwarding import Forwarder
from app.auth.stream_tokens import derive_stream_key
from app.mcp.config import parse_servers
from app.routing.catalogue import capabilities_tool, routed_tools
from app.routing.embeddings import LazyEmbeddings
from app.routing.router import CAPABILITIES_TOOL, RouterConfig, ToolRouter
from app.runs.background import BackgroundResults
from app.runs.bus import Bus
from app.runs.job_stops import JobStops
from app.runs.turns import Runs
from app.settings import Settings
from app.store.database import Database
from app.store.migrate import Migrations
from app.toolruntime.answer_seal import AnswerSeal
from app.toolruntime.background import BackgroundJobs
from app.toolruntime.runtime import ServerToolRuntime
from app.tools.access import ToolAccess
from app.tools.catalog import ToolCatalog
from app.tools.modules import load_tool_modules, migration_dirs
from app.tools.registry import ToolRegistry

if TYPE_CHECKING:
    from app.mcp.sources import McpSources

log = logging.getLogger("chat_bff")


def build_tool_runtime(
    settings: Settings, catalog: ToolCatalog, db: Database
) -> tuple[ServerToolRuntime, BackgroundJobs]:
    """The runtime every server tool call goes through, and the background jobs it hands
    its `long_running` calls to (it runs their handlers), under the caps."""
    runtime = ServerToolRuntime(
        catalog,
        db,
        default_timeout=settings.tool_timeout_seconds,
        approval_ttl_seconds=settings.approval_ttl_seconds,
        forwarder=Forwarder(
            secret=settings.forward_token_secret,
            issuer=settings.forward_token_issuer,
            ttl_seconds=settings.forward_token_ttl_seconds,
            allow_bearer=settings.forward_bearer_tokens,
        ),
        background_timeout=settings.background_tool_timeout_seconds,
        answer_seal=answer_seal(settings),
    )
    background = BackgroundJobs(
        db,
        catalog,
        instance_id=f"{socket.gethostname()}:{uuid.uuid4().hex[:12]}",
        per_user=settings.background_tools_per_user,
        total=settings.background_tools_total,
        lease_seconds=settings.run_lease_seconds,
    )
    background.runner = runtime.execute
    runtime.background = background
    return runtime, background


def answer_seal(settings: Settings) -> AnswerSeal:
    """Answers to tools' questions are kept keyed with the stream tokens' key, when one is
    stable across processes (else salted: see `app.toolruntime.answer_seal`)."""
    jwt, explicit = settings.jwt_secret, settings.stream_token_secret
    key, stable = derive_stream_key(
        jwt.get_secret_value() if jwt else None, explicit.get_secret_value() if explicit else None
    )
    return AnswerSeal(key if stable else None)


async def start_background(
    background: BackgroundJobs, runs: Runs, db: Database, settings: Settings, bus: Bus
) -> BackgroundJobs:
    """Results continue their conversations through `runs`; a cancel reaches the instance
    running the job through a shared bus; then what dead processes left is resumed or
    failed, and this instance keeps its leases."""
    # A busy conversation is waited for as long as its run may last.
    wait = settings.run_timeout_seconds + settings.run_lease_seconds
    background.deliver = BackgroundResults(runs, db, wait_seconds=wait).deliver
    if bus.shared:
        await JobStops(bus, background).start()
    recovered = await background.start_keeping()
    if recovered:
        log.warning("recovered background jobs a stopped process left", extra={"jobs": recovered})
    return background


# The example toolset, a tool package like any deployer's (see `tool_modules`).
EXAMPLE_TOOLS = "app.examples.graph"


def tool_modules(settings: Settings) -> list[str]:
    """The tool modules this deployment loads, in order: the example graph first where it
    is on (`EXAMPLE_TOOLS_ENABLED`, by default in development only), then `TOOL_MODULES`."""
    example = settings.example_tools_enabled
    if example is None:
        example = settings.environment == "development"
    return [EXAMPLE_TOOLS, *settings.tool_modules] if example else list(settings.tool_modules)


def database_migrations(settings: Settings) -> Migrations:
    """The core plus the tables of the tool modules loaded; the example's revisions stay
    known when it is off, so a database that once had it on still migrates."""
    loaded = tool_modules(settings)
    return Migrations(apply=migration_dirs(loaded), known=migration_dirs([EXAMPLE_TOOLS]))


def build_tool_catalog(settings: Settings) -> ToolCatalog:
    registry = ToolRegistry()
    load_tool_modules(registry, tool_modules(settings))
    access = ToolAccess(
        allow=tuple(settings.tool_allow) if settings.tool_allow is not None else None,
        deny=tuple(settings.tool_deny),
        model_allow={k: tuple(v) for k, v in settings.tool_model_allow.items()},
        model_deny={k: tuple(v) for k, v in settings.tool_model_deny.items()},
    )
    if router_offers_capabilities(settings, len(registry.all())):
        registry.register(capabilities_tool(registry))
    return ToolCatalog(registry, access)


def build_mcp_sources(settings: Settings, registry: ToolRegistry) -> McpSources | None:
    """`MCP_SERVERS` as tool sources over `registry`; a stdio server's allow-listed
    variables are read from this process's environment here, and nowhere else."""
    if settings.mcp_servers is None:
        return None
    configs = parse_servers(settings.mcp_servers.get_secret_value())
    envs = {c.name: {k: os.environ[k] for k in c.env if k in os.environ} for c in configs}
    # The MCP SDK is imported only by a deployment that names servers: it is a third of
    # the service's start-up time and memory, for a feature off by default.
    from app.mcp.sources import McpSources

    return McpSources(configs, registry, envs=envs) if configs else None


def offer_capabilities(settings: Settings, registry: ToolRegistry) -> None:
    """Once MCP servers mounted their tools, the router may need the capabilities tool
    that the service's own tools alone did not call for. A server still unreachable
    counts as bringing tools: they arrive later, and the router reads the registry live."""
    if registry.get(CAPABILITIES_TOOL) is None and router_offers_capabilities(
        settings, max(len(registry.all()), 1)
    ):
        registry.register(capabilities_tool(registry))


def router_offers_capabilities(settings: Settings, tools: int) -> bool:
    """Whether some model may be routed here, so the capabilities tool is registered."""
    modes = {settings.tool_router, *(m.tool_router for m in settings.catalogue_models())}
    if tools == 0 or modes <= {"off", None}:
        return False
    return "on" in modes or tools > settings.tool_router_min_tools


def build_router(settings: Settings, catalog: ToolCatalog) -> ToolRouter:
    config = RouterConfig(
        mode=settings.tool_router,
        min_tools=settings.tool_router_min_tools,
        top_k=settings.tool_router_top_k,
        threshold=settings.tool_router_threshold,
        max_tools=settings.tool_router_max_tools,
    )
    embeddings = LazyEmbeddings(
        settings.tool_router_embeddings,
        max_query_tokens=settings.tool_router_query_tokens,
        threads=settings.tool_router_threads,
    )
    return ToolRouter(lambda: routed_tools(catalog.registry), config, embeddings)
