"""Liveness and readiness."""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import BaseModel, Field

from app.api.deps import Svc

router = APIRouter(tags=["operations"])


class Health(BaseModel):
    """A probe's answer, for load balancers and orchestrators."""

    status: str = Field(description="`ok` when the check passed.")


@router.get("/healthz", response_model=Health, summary="Liveness: the process answers.")
async def healthz() -> Health:
    return Health(status="ok")


@router.get("/readyz", response_model=Health, summary="Readiness: dependencies answer.")
async def readyz(services: Svc) -> Health:
    return Health(status="ok")
