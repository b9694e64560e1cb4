"""`Annotated` dependency aliases, gathered in one place.

Routers declare what they need (`Svc`, `CallerDep`) and never reach into `app.state`.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from app.container import Services
from app.domain.identity import Caller


def get_services(request: Request) -> Services:
    services: Services = request.app.state.services
    return services


Svc = Annotated[Services, Depends(get_services)]


async def get_caller(request: Request, services: Svc) -> Caller:
    """The authenticated caller, within their request rate; development mode makes
    everyone without credentials the local user."""
    caller = await services.authenticate(request)
    await services.limits.check_request(caller)
    return caller


CallerDep = Annotated[Caller, Depends(get_caller)]
