"""`GET /api/tools`: the server tools this caller (and the chosen model) may use."""

from __future__ import annotations

from typing import Annotated

from fastapi import Query

from app.api.deps import CallerDep, CatalogDep, ToolCatalogDep
from app.api.routing import api_router
from app.api.schemas.tools import ToolList, ToolOut

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
