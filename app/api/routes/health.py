"""Liveness and readiness."""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi.responses import JSONResponse, Response

from app.api.deps import DbDep, RedisStateDep, RouterDep, ToolSourcesDep
from app.api.routing import api_router
from app.api.schemas.catalog import Health, ToolSourceStatus

router = api_router(tags=["operations"])

READY_TIMEOUT_SECONDS = 2.0


_NOT_READY: dict[int | str, dict[str, Any]] = {
    503: {"description": "The database does not answer: take this instance out of rotation."}
}


@router.get(
    "/healthz",
    response_model=Health,
    response_model_exclude_none=True,
    summary="Liveness: the process answers.",
)
async def healthz() -> Health:
    return Health(status="ok")


@router.get(
    "/readyz",
    response_model=Health,
    responses=_NOT_READY,
    summary="Readiness: the database answers (and how each MCP server and Redis are doing).",
    response_model_exclude_none=True,
)
async def readyz(
    db: DbDep, sources: ToolSourcesDep, tool_router: RouterDep, redis: RedisStateDep
) -> Response:
    try:
        async with asyncio.timeout(READY_TIMEOUT_SECONDS):
            ready = await db.answers()
    except TimeoutError:
        ready = False
    if not ready:
        body = {"error": {"code": "not_ready", "message": "The database does not answer."}}
        return JSONResponse(body, status_code=503)
    shown = [ToolSourceStatus.model_validate(s) for s in sources] or None
    health = Health(status="ok", toolSources=shown, toolRouter=tool_router.status(), redis=redis)
    return JSONResponse(health.model_dump(exclude_none=True))
