"""Creating, listing and revoking API keys, audited; shared by the admin API and the CLI."""

from __future__ import annotations

from app.auth.api_keys import display_prefix, generate_api_key, hash_api_key
from app.store.database import Database
from app.store.repos.api_keys import ApiKeyRecord


async def create_api_key(
    db: Database,
    *,
    name: str,
    owner_id: str,
    roles: list[str],
    created_by: str,
) -> tuple[ApiKeyRecord, str]:
    """The stored record and the key itself, which exists nowhere else from now on."""
    key = generate_api_key()
    async with db.write() as tx:
        record = await tx.api_keys.create(
            key_hash=hash_api_key(key),
            display_prefix=display_prefix(key),
            name=name,
            owner_id=owner_id,
            roles=roles,
            created_by=created_by,
        )
        await tx.audit(
            actor_id=created_by,
            action="api_key.create",
            target_type="api_key",
            target_id=record.id,
            details={"owner_id": owner_id, "roles": list(record.roles), "name": name},
        )
    return record, key


async def list_api_keys(
    db: Database,
    *,
    owner_id: str | None = None,
    include_revoked: bool = False,
) -> list[ApiKeyRecord]:
    async with db.read() as tx:
        return await tx.api_keys.list(owner_id=owner_id, include_revoked=include_revoked)


async def revoke_api_key(db: Database, key_id: str, *, actor_id: str) -> ApiKeyRecord:
    async with db.write() as tx:
        repo = tx.api_keys
        before = await repo.get(key_id)
        record = await repo.revoke(key_id)
        if not before.revoked:
            await tx.audit(
                actor_id=actor_id,
                action="api_key.revoke",
                target_type="api_key",
                target_id=key_id,
                details={"owner_id": record.owner_id},
            )
    return record
