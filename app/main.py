"""`create_app(settings)`: wires the service graph, routers and error handlers.

`uvicorn app.main:app` works through the module-level `__getattr__` below, which builds
the app on first access; importing this module builds nothing.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI

from app.api import chat, health, models_route
from app.api.errors import install_error_handlers
from app.container import build_services
from app.providers.base import Provider
from app.settings import Settings, get_settings

API_DESCRIPTION = """\
chat-bff: a backend-for-frontend for AI chat UIs. Provider keys stay on the server; tool
calls become typed parts (Gravity UI AIKit shapes); runs stream over resumable SSE.
"""


def create_app(
    settings: Settings | None = None, *, providers: Mapping[str, Provider] | None = None
) -> FastAPI:
    settings = settings or get_settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        services = await build_services(settings, providers=providers)
        app.state.services = services
        try:
            yield
        finally:
            await services.aclose()

    app = FastAPI(
        title="chat-bff",
        version="0.1.0",
        description=API_DESCRIPTION,
        lifespan=lifespan,
    )
    install_error_handlers(app)
    app.include_router(health.router)
    app.include_router(models_route.router)
    app.include_router(chat.router)
    return app


def __getattr__(name: str) -> Any:
    if name == "app":
        return create_app()
    raise AttributeError(name)
