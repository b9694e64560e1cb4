"""`create_app(settings)`: wires the service graph, routers and error handlers.

`uvicorn app.main:app` works through the module-level `__getattr__` below, which builds
the app on first access; importing this module builds nothing.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

from app.observability.free_lists import FreeListReserve
from app.observability.memory import Trimmer, long_lived, serving_collector, task_registry

# The service's modules are about a million objects that live as long as the process
# (see `long_lived`).
with long_lived():
    from fastapi import FastAPI

    from app.api.pydantic_v1_check import ask_only_once_imported

    ask_only_once_imported()  # before the routes below are built

    from app.api.drain import Drain, GracefulShutdown
    from app.api.errors import install_auth_error_handler, install_error_handlers
    from app.api.http_protocol import (
        HEADERS_SECONDS,
        SERVER_TABLES,
        WRITE_STALL_SECONDS,
        ServerTables,
    )
    from app.api.middleware import install_middlewares
    from app.api.openapi import install_openapi
    from app.api.operation_ids import operation_id
    from app.api.routes import (
        admin,
        agui,
        approvals,
        background_jobs,
        chat,
        conversations,
        files,
        follow,
        health,
        models,
        openai_chat,
        openai_conversations,
        openai_responses,
        openai_responses_stored,
        page,
        proposals,
        queue,
        runs,
        stream_tokens,
        submissions,
        tools,
        ui_chat,
        usage,
        workspace_undo,
    )
    from app.api.routes import metrics as metrics_route
    from app.api.sse_lean import shutdown_tables
    from app.api.streaming import StreamConfig
    from app.container import build_services
    from app.domain.redaction import url_secrets
    from app.mcp.config import parse_servers
    from app.observability.logging import configure_logging
    from app.observability.metrics import Metrics
    from app.providers.base import Provider
    from app.settings import Settings, get_settings, settings_or_exit

API_DESCRIPTION = """\
chat-bff: a backend-for-frontend for AI chat UIs. Provider keys stay on the server; tool
calls become typed parts (Gravity UI AIKit shapes); runs stream over resumable SSE.
"""


def create_app(
    settings: Settings | None = None, *, providers: Mapping[str, Provider] | None = None
) -> FastAPI:
    settings = settings or get_settings()
    metrics = Metrics()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[dict[str, Any]]:
        configure_logging(
            level=settings.log_level, json_lines=settings.log_json, secrets=_secrets(settings)
        )
        with long_lived():  # the service graph; the provider SDKs are imported here
            services = await build_services(settings, providers=providers, metrics=metrics)
        services.authenticator.warn_if_open()
        app.state.services = services
        GracefulShutdown(
            drain, services.runs.manager.shutdown, budget=settings.shutdown_timeout_seconds
        ).install()
        # Heap freed by a burst of streams goes back to the system, collected first, and
        # the sets that grew with the burst are rebuilt at their size. The server's sets
        # reach the trimmer through the lifespan's state, which uvicorn hands its protocol.
        server_tables = ServerTables()
        free_lists = FreeListReserve()  # now, in the heap start-up filled
        trimmer = Trimmer(
            free_lists=free_lists.refresh,
            streams=lambda: (drain.open_streams, drain.closed_streams),
            tables=lambda: [*task_registry(), *server_tables(), *shutdown_tables()],
        )
        trimmer.start()
        try:
            with serving_collector():
                yield {
                    SERVER_TABLES: server_tables,
                    WRITE_STALL_SECONDS: settings.stream_send_timeout_seconds,
                    HEADERS_SECONDS: settings.request_headers_timeout_seconds,
                }
        finally:
            await trimmer.stop()
            await services.aclose()

    app = FastAPI(
        title="chat-bff",
        version="0.1.0",
        description=API_DESCRIPTION,
        lifespan=lifespan,
        docs_url=None,  # served by app/api/routes/page.py from the package, not a CDN
        redoc_url=None,
        generate_unique_id_function=operation_id,
    )
    app.state.metrics = metrics
    app.state.drain = drain = Drain()  # begun on SIGTERM: new requests get 503
    app.state.max_body_bytes = settings.max_body_bytes  # beyond it, inline files only
    app.state.max_messages = settings.max_messages
    app.state.max_content_parts = settings.max_content_parts
    app.state.stream_config = StreamConfig(
        heartbeat_seconds=settings.heartbeat_seconds,
        send_timeout_seconds=settings.stream_send_timeout_seconds,
        drain=drain,
    )
    install_error_handlers(app)
    install_auth_error_handler(app)
    install_middlewares(
        app,
        metrics=metrics,
        max_body_bytes=settings.max_body_bytes,
        body_limits=_body_limits(settings),
        file_limits={"/api/files": settings.upload_max_bytes},
        body_seconds=settings.request_body_timeout_seconds,
        path_seconds=_body_seconds(settings),
        cors_origins=settings.cors_origins,
        drain=drain,
    )
    # The chat turns first: a request is matched against the routers in this order, and
    # reaching the 20th cost /v1/chat/completions about 110 us a request (no path of the
    # routers before them is one of theirs, so which route serves a request is unchanged).
    app.include_router(chat.router)
    app.include_router(openai_chat.router)
    app.include_router(page.router)
    app.include_router(metrics_route.router)
    app.include_router(stream_tokens.router)
    app.include_router(admin.router)
    app.include_router(usage.router)
    app.include_router(health.router)
    app.include_router(models.router)
    app.include_router(conversations.router)
    app.include_router(files.router)
    app.include_router(runs.router)
    app.include_router(follow.router)
    app.include_router(tools.router)
    app.include_router(approvals.router)
    app.include_router(submissions.router)
    app.include_router(background_jobs.router)
    app.include_router(proposals.router)
    app.include_router(workspace_undo.router)
    app.include_router(queue.router)
    app.include_router(openai_responses.router)
    app.include_router(openai_responses_stored.router)
    app.include_router(openai_conversations.router)
    app.include_router(ui_chat.router)
    app.include_router(agui.router)
    install_openapi(app)
    return app


# The stateless chat routes take files inline as data URLs (base64: 4 bytes per 3).
_INLINE_FILE_ROUTES = ("/api/chat", "/v1/chat/completions", "/v1/responses")
_MULTIPART_OVERHEAD = 64 * 1024


def _body_limits(settings: Settings) -> dict[str, int]:
    """Body caps of the routes that carry files: an upload is capped by its own route
    (413 naming the file limit), the middleware only stops what is far past it."""
    inline = settings.max_body_bytes + settings.upload_max_bytes * 4 // 3
    return {
        "/api/files": settings.upload_max_bytes + _MULTIPART_OVERHEAD,
        **dict.fromkeys(_INLINE_FILE_ROUTES, inline),
    }


def _body_seconds(settings: Settings) -> dict[str, float]:
    """Body deadlines of the routes that carry files: the files' time on top of the body's
    (an upload's own deadline, counted by the file service, passes first)."""
    seconds = settings.request_body_timeout_seconds + settings.upload_timeout_seconds
    return dict.fromkeys(_body_limits(settings), seconds)


def _secrets(settings: Settings) -> list[str]:
    """Secret values the log redaction filter scrubs verbatim, whatever their shape."""
    values = [
        settings.openai_api_key,
        settings.anthropic_api_key,
        settings.jwt_secret,
        settings.stream_token_secret,
    ]
    found = [v.get_secret_value() for v in values if v is not None]
    # A key in a provider's or an MCP server's URL (gateways and hosted MCP servers take
    # it in the path or query), which the SDKs' loggers print with every request.
    urls = [settings.openai_base_url, settings.anthropic_base_url]
    if settings.mcp_servers is not None:
        urls += [s.url for s in parse_servers(settings.mcp_servers.get_secret_value())]
    return found + [part for url in urls if url for part in url_secrets(url)]


def __getattr__(name: str) -> Any:
    if name == "app":
        # A configuration error ends the process here: one line per problem, no traceback.
        with long_lived():
            return create_app(settings_or_exit())
    raise AttributeError(name)
