"""Creating, listing and revoking API keys, audited; shared by the admin API and the CLI."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.auth.api_keys import display_prefix, generate_api_key, hash_api_key
from app.store.repos import record_audit
from app.store.repos.api_keys import ApiKeyRecord, ApiKeyRepo


async def create_api_key(
    sessions: async_sessionmaker[AsyncSession],
    *,
    name: str,
    owner_id: str,
    roles: list[str],
    created_by: str,
) -> tuple[ApiKeyRecord, str]:
    """The stored record and the key itself, which exists nowhere else from now on."""
    key = generate_api_key()
    async with sessions.begin() as session:
        record = await ApiKeyRepo(session).create(
            key_hash=hash_api_key(key),
            display_prefix=display_prefix(key),
            name=name,
            owner_id=owner_id,
            roles=roles,
            created_by=created_by,
        )
        await record_audit(
            session,
            actor_id=created_by,
            action="api_key.create",
            target_type="api_key",
            target_id=record.id,
            details={"owner_id": owner_id, "roles": list(record.roles), "name": name},
        )
    return record, key


async def list_api_keys(
    sessions: async_sessionmaker[AsyncSession],
    *,
    owner_id: str | None = None,
    include_revoked: bool = False,
) -> list[ApiKeyRecord]:
    async with sessions() as session:
        return await ApiKeyRepo(session).list(owner_id=owner_id, include_revoked=include_revoked)


async def revoke_api_key(
    sessions: async_sessionmaker[AsyncSession], key_id: str, *, actor_id: str
) -> ApiKeyRecord:
    async with sessions.begin() as session:
        repo = ApiKeyRepo(session)
        before = await repo.get(key_id)
        record = await repo.revoke(key_id)
        if not before.revoked:
            await record_audit(
                session,
                actor_id=actor_id,
                action="api_key.revoke",
                target_type="api_key",
                target_id=key_id,
                details={"owner_id": record.owner_id},
            )
    return record
