"""Admin endpoints: the audit log, API key management and everyone's usage.

Callers without the `admin` role get 404 on every route here, the same as a path that does
not exist: the admin surface is not something a user can probe.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, Query, status

from app.api.deps import CallerDep, DbDep, UsageDep
from app.api.exact_params import QueryBool
from app.api.routing import api_router
from app.api.schemas.identity import (
    ApiKeyCreate,
    ApiKeyCreated,
    ApiKeyList,
    ApiKeyOut,
    AuditEntryOut,
    AuditPageOut,
)
from app.api.schemas.usage import AdminUsageReport, RoleUsage, UserUsage
from app.api.usage_report import IsoDay, bounds, day_range, totals
from app.auth.key_management import create_api_key, list_api_keys, revoke_api_key
from app.domain.errors import NotFound
from app.domain.identity import Caller
from app.store.repos.api_keys import ApiKeyRecord
from app.usage.book import Report


async def require_admin(caller: CallerDep) -> Caller:
    if not caller.is_admin:
        raise NotFound("Not found.")
    return caller


AdminDep = Annotated[Caller, Depends(require_admin)]

_NOT_FOR_YOU: dict[int | str, dict[str, Any]] = {
    404: {"description": "Not found (also what a caller without the `admin` role gets)."}
}
router = api_router(prefix="/api/admin", tags=["admin"], responses=_NOT_FOR_YOU)


def _key_out(record: ApiKeyRecord) -> ApiKeyOut:
    return ApiKeyOut(
        id=record.id,
        name=record.name,
        prefix=record.display_prefix,
        owner_id=record.owner_id,
        roles=list(record.roles),
        created_by=record.created_by,
        created_at=record.created_at,
        last_used_at=record.last_used_at,
        revoked_at=record.revoked_at,
    )


@router.get(
    "/audit",
    response_model=AuditPageOut,
    summary="Read the audit log (admins).",
    responses={400: {"description": "The cursor is not one this endpoint gave out."}},
)
async def read_audit(
    db: DbDep,
    admin: AdminDep,
    limit: Annotated[int, Query(ge=1, le=200, description="Page size.")] = 50,
    cursor: Annotated[str | None, Query(max_length=200, description="From `next_cursor`.")] = None,
    actor_id: Annotated[str | None, Query(max_length=255, description="Only this actor.")] = None,
    action: Annotated[str | None, Query(max_length=64, description="Only this action.")] = None,
    target_type: Annotated[str | None, Query(max_length=64, description="Only this kind.")] = None,
    target_id: Annotated[str | None, Query(max_length=128, description="Only this object.")] = None,
) -> AuditPageOut:
    async with db.read() as tx:
        page = await tx.audit_page(
            limit=limit,
            cursor=cursor or None,
            actor_id=actor_id,
            action=action,
            target_type=target_type,
            target_id=target_id,
        )
    return AuditPageOut(
        data=[
            AuditEntryOut(
                id=e.id,
                at=e.at,
                actor_id=e.actor_id,
                action=e.action,
                target_type=e.target_type,
                target_id=e.target_id,
                details=e.details,
            )
            for e in page.items
        ],
        next_cursor=page.next_cursor,
    )


@router.get(
    "/usage", response_model=AdminUsageReport, summary="Usage per user and per role (admins)."
)
async def read_all_usage(
    usage: UsageDep,
    admin: AdminDep,
    start: Annotated[IsoDay | None, Query(alias="from", description="First UTC day.")] = None,
    end: Annotated[IsoDay | None, Query(alias="to", description="Last UTC day, included.")] = None,
) -> AdminUsageReport:
    first, last = day_range(start, end, usage.today())
    report: Report = await usage.report(*bounds(first, last))
    return AdminUsageReport(
        start=first,
        end=last,
        users=[UserUsage(user_id=r.key[0], **totals(r)) for r in report.users],
        roles=[RoleUsage(role=r.key[0], **totals(r)) for r in report.roles],
    )


@router.post(
    "/api-keys",
    response_model=ApiKeyCreated,
    status_code=status.HTTP_201_CREATED,
    summary="Create an API key; the key is shown only in this answer.",
)
async def create_key(body: ApiKeyCreate, db: DbDep, admin: AdminDep) -> ApiKeyCreated:
    record, key = await create_api_key(
        db,
        name=body.name,
        owner_id=body.owner_id,
        roles=body.roles,
        created_by=admin.user_id,
    )
    return ApiKeyCreated(**_key_out(record).model_dump(), key=key)


@router.get("/api-keys", response_model=ApiKeyList, summary="List API keys (never the keys).")
async def list_keys(
    db: DbDep,
    admin: AdminDep,
    owner_id: Annotated[str | None, Query(max_length=255, description="Only this owner.")] = None,
    include_revoked: Annotated[QueryBool, Query(description="Also list revoked keys.")] = False,
) -> ApiKeyList:
    records = await list_api_keys(db, owner_id=owner_id, include_revoked=include_revoked)
    return ApiKeyList(data=[_key_out(r) for r in records])


@router.delete(
    "/api-keys/{key_id}", response_model=ApiKeyOut, summary="Revoke an API key (idempotent)."
)
async def revoke_key(key_id: str, db: DbDep, admin: AdminDep) -> ApiKeyOut:
    return _key_out(await revoke_api_key(db, key_id, actor_id=admin.user_id))
