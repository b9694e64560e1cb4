"""`Annotated` dependency aliases, gathered in one place.

Routers declare what they need (`CallerDep`, and narrow values such as `ApprovalsDep`,
`ProposalsDep`, `ToolCatalogDep`, `RunsDep`; `Svc` where a route still takes the whole
graph) and never reach into `app.state`.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from app.container import Services
from app.domain.identity import Caller
from app.domain.models import Catalog
from app.runs.service import Runs
from app.toolruntime.approvals import ApprovalService
from app.toolruntime.proposals import ProposalService
from app.tools.catalog import ToolCatalog


def get_services(request: Request) -> Services:
    services: Services = request.app.state.services
    return services


Svc = Annotated[Services, Depends(get_services)]


def get_runs(request: Request) -> Runs:
    return get_services(request).runs


def get_catalog(request: Request) -> Catalog:
    return get_services(request).catalog


def get_approvals(request: Request) -> ApprovalService:
    return get_services(request).approvals


def get_proposals(request: Request) -> ProposalService:
    return get_services(request).proposals


def get_tool_catalog(request: Request) -> ToolCatalog:
    return get_services(request).tool_catalog


RunsDep = Annotated[Runs, Depends(get_runs)]
CatalogDep = Annotated[Catalog, Depends(get_catalog)]
ApprovalsDep = Annotated[ApprovalService, Depends(get_approvals)]
ProposalsDep = Annotated[ProposalService, Depends(get_proposals)]
ToolCatalogDep = Annotated[ToolCatalog, Depends(get_tool_catalog)]


async def get_caller(request: Request, services: Svc) -> Caller:
    """The authenticated caller, within their request rate; development mode makes
    everyone without credentials the local user."""
    caller = await services.authenticate(request)
    await services.limits.check_request(caller)
    return caller


CallerDep = Annotated[Caller, Depends(get_caller)]
