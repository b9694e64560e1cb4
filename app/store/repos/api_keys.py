"""API key queries. Like every repository it never commits: the caller owns the transaction.

`find_active` is the authenticator's lookup (by digest, revoked keys excluded). Management
methods are for admins; `owner_id` narrows them when given, and a key outside that filter
is the same `NotFound` as a missing one.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from app.domain.errors import NotFound
from app.store.tables.identity import ApiKeyRow
from app.store.tables.types import new_id, utcnow


@dataclass(frozen=True, slots=True)
class ApiKeyRecord:
    id: str
    display_prefix: str
    name: str
    owner_id: str
    roles: tuple[str, ...]
    created_by: str
    created_at: datetime
    last_used_at: datetime | None
    revoked_at: datetime | None

    @property
    def revoked(self) -> bool:
        return self.revoked_at is not None


def _record(row: ApiKeyRow) -> ApiKeyRecord:
    return ApiKeyRecord(
        id=row.id,
        display_prefix=row.display_prefix,
        name=row.name,
        owner_id=row.owner_id,
        roles=tuple(str(r) for r in row.roles),
        created_by=row.created_by,
        created_at=row.created_at,
        last_used_at=row.last_used_at,
        revoked_at=row.revoked_at,
    )


class ApiKeyRepo:
    def __init__(self, session: AsyncSession) -> None:
        self._session = session

    async def create(
        self,
        *,
        key_hash: str,
        display_prefix: str,
        name: str,
        owner_id: str,
        roles: list[str],
        created_by: str,
    ) -> ApiKeyRecord:
        row = ApiKeyRow(
            id=new_id("key"),
            key_hash=key_hash,
            display_prefix=display_prefix,
            name=name,
            owner_id=owner_id,
            roles=sorted(set(roles)),
            created_by=created_by,
            created_at=utcnow(),
            last_used_at=None,
            revoked_at=None,
        )
        self._session.add(row)
        await self._session.flush()
        return _record(row)

    async def find_active(self, key_hash: str) -> ApiKeyRecord | None:
        row = await self._session.scalar(
            select(ApiKeyRow).where(ApiKeyRow.key_hash == key_hash, ApiKeyRow.revoked_at.is_(None))
        )
        return _record(row) if row is not None else None

    async def touch(self, key_id: str) -> None:
        await self._session.execute(
            update(ApiKeyRow).where(ApiKeyRow.id == key_id).values(last_used_at=utcnow())
        )

    async def get(self, key_id: str, *, owner_id: str | None = None) -> ApiKeyRecord:
        query = select(ApiKeyRow).where(ApiKeyRow.id == key_id)
        if owner_id is not None:
            query = query.where(ApiKeyRow.owner_id == owner_id)
        row = await self._session.scalar(query)
        if row is None:
            raise NotFound("API key not found.")
        return _record(row)

    async def list(
        self, *, owner_id: str | None = None, include_revoked: bool = False
    ) -> list[ApiKeyRecord]:
        query = select(ApiKeyRow).order_by(ApiKeyRow.created_at.desc(), ApiKeyRow.id)
        if owner_id is not None:
            query = query.where(ApiKeyRow.owner_id == owner_id)
        if not include_revoked:
            query = query.where(ApiKeyRow.revoked_at.is_(None))
        return [_record(r) for r in await self._session.scalars(query)]

    async def revoke(self, key_id: str, *, owner_id: str | None = None) -> ApiKeyRecord:
        """Revoke a key; revoking a revoked key is a no-op that returns it unchanged."""
        record = await self.get(key_id, owner_id=owner_id)
        if record.revoked:
            return record
        await self._session.execute(
            update(ApiKeyRow).where(ApiKeyRow.id == key_id).values(revoked_at=utcnow())
        )
        return await self.get(key_id, owner_id=owner_id)
