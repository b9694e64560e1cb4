"""`GET /api/tools`: the server tools this caller (and the chosen model) may use."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Query
from pydantic import BaseModel, Field

from app.api.deps import CallerDep, CatalogDep, ToolCatalogDep
from app.api.routing import api_router
from app.tools.base import Policy

router = api_router(prefix="/api", tags=["tools"])


class ToolOut(BaseModel):
    """A server tool as the model sees it, plus its policy for the UI."""

    name: str = Field(description="Tool name, as the model calls it.")
    description: str = Field(description="What the tool does (the model reads this too).")
    parameters: dict[str, Any] = Field(
        description="JSON schema of the arguments the model may send (scope arguments are "
        "pinned by the server and not listed)."
    )
    policy: Policy = Field(
        description="`auto` runs at once, `confirm` asks a human first, `propose` queues it."
    )
    mutates: bool = Field(description="True when the tool changes data a UI may show.")


class ToolList(BaseModel):
    """The server tools this caller may use with the chosen model."""

    data: list[ToolOut] = Field(description="Tools the caller may use with the model.")


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
