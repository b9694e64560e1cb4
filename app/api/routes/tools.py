"""`GET /api/tools`: the server tools this caller (and the chosen model) may use."""

from __future__ import annotations

from typing import Annotated

from fastapi import Query

from app.api.deps import CallerDep, CatalogDep, RouterDep, ToolCatalogDep
from app.api.routing import api_router
from app.api.schemas.tools import RouteIn, RouteOut, ToolList, ToolOut

router = api_router(prefix="/api", tags=["tools"])


@router.get("/tools", response_model=ToolList, summary="List the server tools you may use.")
async def list_tools(
    tools: ToolCatalogDep,
    models: CatalogDep,
    caller: CallerDep,
    model: Annotated[
        str | None, Query(description="Catalogue model id; the default model when absent.")
    ] = None,
) -> ToolList:
    model_id = models.resolve(model, caller.roles).id
    return ToolList(
        data=[
            ToolOut(
                name=t.name,
                description=t.description,
                parameters=t.parameters_schema(),
                policy=t.policy,
                mutates=t.mutates,
            )
            for t in tools.available(caller, model_id)
        ]
    )


@router.post(
    "/tools/route",
    response_model=RouteOut,
    summary="Show which tools the router would offer for a request, and why.",
)
async def route_tools(
    body: RouteIn,
    tools: ToolCatalogDep,
    models: CatalogDep,
    caller: CallerDep,
    tool_router: RouterDep,
) -> RouteOut:
    model = models.resolve(body.model, caller.roles)
    available = [t.name for t in tools.available(caller, model.id)]
    route = await tool_router.route(body.text, available, model)
    return RouteOut(
        routed=route.routed,
        reason=route.reason,
        tools=route.tools,
        intended=route.intended,
        negated=route.negated,
        keyword_hits=route.keyword_hits,
        similarities=route.similarities,
        fallback_used=route.fallback_used,
        embeddings=route.embeddings or tool_router.embeddings.status,
        elapsed_ms=route.elapsed_ms,
        available=len(available),
    )
