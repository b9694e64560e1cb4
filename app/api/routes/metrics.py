"""`GET /metrics`: Prometheus text exposition of this instance's registry."""

from __future__ import annotations

from fastapi import Request, Response

from app.api.routing import api_router
from app.observability.metrics import Metrics

router = api_router(tags=["operations"])


@router.get(
    "/metrics",
    summary="Prometheus metrics.",
    response_class=Response,
    responses={200: {"content": {"text/plain": {}}, "description": "Text exposition format."}},
)
async def metrics(request: Request) -> Response:
    registry: Metrics = request.app.state.metrics
    body, content_type = registry.render()
    return Response(content=body, media_type=content_type)
