"""`Annotated` dependency aliases, gathered in one place.

Routes declare the narrow values they need (`RunsDep`, `CatalogDep`, `StreamDep`,
`ApprovalsDep`, `ProposalsDep`, `ToolCatalogDep`, `FilesDep`, `UsageDep`, `CallerDep`, ...)
and never reach into `app.state` or the container themselves. The values are built once,
at start-up, by the composition root (`app.container`) and hung on `app.state` by
`create_app`.

Every dependency is `async def`: FastAPI runs a plain `def` dependency in its thread pool,
one thread hop per dependency per request, and a burst of requests leaves dozens of idle
worker threads behind (each with its own allocator arena). These only read `app.state`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Annotated, Any

from fastapi import Depends, Request

from app.api import idempotency
from app.api.middleware import STREAM_SLOT_KEY
from app.api.streaming import StreamConfig
from app.auth.authenticator import Authenticator, Credentials
from app.container import Services
from app.domain.identity import Caller
from app.domain.models import Catalog
from app.files.attachments import Attachments
from app.files.service import Files
from app.observability.logging import user_id_var
from app.redis.state import RedisState
from app.routing.router import ToolRouter
from app.runs.following import ConversationFollow
from app.runs.turns import Runs
from app.store.database import Database
from app.toolruntime.approvals import ApprovalService
from app.toolruntime.background import BackgroundJobs
from app.toolruntime.elicitations import ElicitationService
from app.toolruntime.proposals import ProposalService
from app.toolruntime.queue import ReviewQueue
from app.toolruntime.undo import BatchUndo
from app.tools.catalog import ToolCatalog
from app.usage.book import UsageBook


def _services(request: Request) -> Services:
    services: Services = request.app.state.services
    return services


async def get_runs(request: Request) -> Runs:
    return _services(request).runs


async def get_catalog(request: Request) -> Catalog:
    return _services(request).catalog


async def get_stream_config(request: Request) -> StreamConfig:
    config: StreamConfig = request.app.state.stream_config
    return config


async def get_authenticator(request: Request) -> Authenticator:
    return _services(request).authenticator


async def get_db(request: Request) -> Database:
    return _services(request).db


async def get_approvals(request: Request) -> ApprovalService:
    return _services(request).approvals


async def get_background(request: Request) -> BackgroundJobs:
    return _services(request).background


async def get_submissions(request: Request) -> ElicitationService:
    return ElicitationService(_services(request).approvals.runtime)


async def get_proposals(request: Request) -> ProposalService:
    return _services(request).proposals


async def get_undo(request: Request) -> BatchUndo:
    return BatchUndo(_services(request).proposals.runtime)


async def get_review_queue(request: Request) -> ReviewQueue:
    return ReviewQueue(_services(request).db)


async def get_follow(request: Request) -> ConversationFollow:
    services = _services(request)
    db = services.db
    return ConversationFollow(db, services.runs, services.bus, expire=services.approvals.settle_due)


async def get_tool_catalog(request: Request) -> ToolCatalog:
    return _services(request).tool_catalog


async def get_files(request: Request) -> Files:
    return _services(request).files


async def get_attachments(request: Request) -> Attachments:
    return _services(request).attachments


async def get_tool_sources(request: Request) -> list[dict[str, Any]]:
    """Each MCP server's state (`connected`, `unavailable`, ...), for `/readyz`."""
    mcp = _services(request).mcp
    return mcp.status() if mcp is not None else []


async def get_router(request: Request) -> ToolRouter:
    return _services(request).router


async def get_redis_state(request: Request) -> RedisState | None:
    """What the process knows of its Redis (`REDIS_URL`), asked afresh when it has heard
    nothing lately (`app.redis.readiness`), for `/readyz`; None without one."""
    redis = _services(request).redis
    return await redis.state() if redis is not None else None


DbDep = Annotated[Database, Depends(get_db)]
AuthDep = Annotated[Authenticator, Depends(get_authenticator)]
RunsDep = Annotated[Runs, Depends(get_runs)]
CatalogDep = Annotated[Catalog, Depends(get_catalog)]
StreamDep = Annotated[StreamConfig, Depends(get_stream_config)]
ApprovalsDep = Annotated[ApprovalService, Depends(get_approvals)]
ProposalsDep = Annotated[ProposalService, Depends(get_proposals)]
BackgroundDep = Annotated[BackgroundJobs, Depends(get_background)]
SubmissionsDep = Annotated[ElicitationService, Depends(get_submissions)]
QueueDep = Annotated[ReviewQueue, Depends(get_review_queue)]
FollowDep = Annotated[ConversationFollow, Depends(get_follow)]
UndoDep = Annotated[BatchUndo, Depends(get_undo)]
ToolCatalogDep = Annotated[ToolCatalog, Depends(get_tool_catalog)]
FilesDep = Annotated[Files, Depends(get_files)]
AttachmentsDep = Annotated[Attachments, Depends(get_attachments)]
ToolSourcesDep = Annotated[list[dict[str, Any]], Depends(get_tool_sources)]
RouterDep = Annotated[ToolRouter, Depends(get_router)]
RedisStateDep = Annotated[RedisState | None, Depends(get_redis_state)]


async def get_usage(request: Request) -> UsageBook:
    return _services(request).usage


UsageDep = Annotated[UsageBook, Depends(get_usage)]


async def get_caller(request: Request) -> Caller:
    """The authenticated caller, within their request rate; development mode makes
    everyone without credentials the local user. (Every route asks for it: the services
    are read here rather than as a dependency of its own, one resolution less a request.)"""
    services = _services(request)
    # Parsing a query string to look for the stream token costs 3 us; most requests have none.
    token = request.query_params.get("token") if request.scope.get("query_string") else None
    credentials = Credentials(
        authorization=request.headers.get("authorization"),
        api_key=request.headers.get("x-api-key"),
        stream_token=token,
        method=request.method,
        # Only a stream token is bound to a path: building the request's URL to read it
        # was half of this dependency's work on every other request.
        path=request.url.path if token is not None else "/",
    )
    caller = await services.authenticator.authenticate(credentials)
    user_id_var.set(caller.user_id)  # every log line of the request names its caller
    await services.limits.check_request(caller)
    return caller


CallerDep = Annotated[Caller, Depends(get_caller)]


async def get_idempotency_key(request: Request) -> idempotency.RequestKey | None:
    """The request's `Idempotency-Key` with its fingerprint; None without one. (It takes
    the request alone, so a turn's route keeps the direct path; the route binds the key
    to its caller.)"""
    key = request.headers.get(idempotency.HEADER)
    if key is None:
        return None
    ttl = get_idempotency_ttl(request)
    body = await request.body()  # read already for the body model: kept by Starlette
    return idempotency.request_key(key, request.method, request.url.path, body, ttl)


IdempotencyDep = Annotated[idempotency.RequestKey | None, Depends(get_idempotency_key)]


def get_idempotency_ttl(request: Request) -> timedelta:
    """How long a kept outcome lives (`IDEMPOTENCY_KEY_TTL_SECONDS`)."""
    return timedelta(seconds=_services(request).settings.idempotency_key_ttl_seconds)


IdempotencyTtlDep = Annotated[timedelta, Depends(get_idempotency_ttl)]


async def hold_stream_slot(request: Request, caller: CallerDep) -> None:
    """One of the caller's open event streams (`RATE_LIMIT_OPEN_STREAMS`), taken before
    the route opens anything and given back when the request ends (by the request context
    middleware, so a stream that fails or is cut still gives it back). Without it one
    caller could hold connections and memory open without end (a feed never ends)."""
    release = _services(request).limits.open_stream(caller)
    if release is not None:
        request.scope[STREAM_SLOT_KEY] = release


StreamSlot = Depends(hold_stream_slot)


@dataclass(frozen=True, slots=True)
class TurnContext:
    """What a stateless turn route (`/api/chat`, `/v1/chat/completions`) works with."""

    caller: Caller
    runs: Runs
    stream: StreamConfig
    approvals: ApprovalService


async def get_turn(request: Request) -> TurnContext:
    """The caller (authenticated, within their request rate) and the services of a turn,
    as one dependency: FastAPI solves each dependency of a route as a level of its own
    (its parameters, cache key, a call), 50-70 us apiece on this machine, on the way to
    the first token."""
    caller = await get_caller(request)
    services = _services(request)
    config: StreamConfig = request.app.state.stream_config
    return TurnContext(caller, services.runs, config, services.approvals)


TurnDep = Annotated[TurnContext, Depends(get_turn)]
