"""`GET /api/models`: the catalogue as this caller may use it."""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import BaseModel, Field

from app.api.deps import CallerDep, CatalogDep
from app.domain.models import allowed

router = APIRouter(prefix="/api", tags=["models"])


class ModelOut(BaseModel):
    """A catalogue model; its id is what requests send as `model`."""

    id: str = Field(description="Model id to send as `model`.")
    provider: str = Field(description="openai, anthropic or scripted.")
    context_window: int = Field(description="Context window in tokens.")
    supports_tools: bool = Field(description="Whether the model can call tools.")
    supports_vision: bool = Field(description="Whether the model accepts images.")
    description: str = Field(description="Human-readable description.")
    default: bool = Field(description="True for the model used when none is named.")


class ModelList(BaseModel):
    """The model catalogue as this caller may use it."""

    data: list[ModelOut] = Field(description="Models the caller may use.")
    default: str = Field(description="Id of the default model.")
    offline: bool = Field(description="True when only the offline scripted model is served.")


@router.get("/models", response_model=ModelList, summary="List the models you may use.")
async def list_models(catalog: CatalogDep, caller: CallerDep) -> ModelList:
    return ModelList(
        data=[
            ModelOut(
                id=m.id,
                provider=m.provider,
                context_window=m.context_window,
                supports_tools=m.supports_tools,
                supports_vision=m.supports_vision,
                description=m.description,
                default=m.id == catalog.default_id,
            )
            for m in catalog.all()
            if allowed(m, caller.roles)
        ],
        default=catalog.default_id,
        offline=catalog.offline,
    )
