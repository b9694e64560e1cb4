"""`GET /api/models`: the catalogue as this caller may use it."""

from __future__ import annotations

from app.api.deps import CallerDep, CatalogDep
from app.api.routing import api_router
from app.api.schemas.catalog import ModelList, ModelOut
from app.domain.models import allowed

router = api_router(prefix="/api", tags=["models"])


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
