"""The audit log: who did what to which object, written in the caller's transaction."""

from __future__ import annotations

import re
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from app.store.tables import AuditRow, new_id, utcnow

# A details key that looks like it holds a credential is never written.
_SECRET_KEY = re.compile(r"(secret|token|password|passwd|api_?key|authorization)", re.I)
REDACTED = "[redacted]"


def _scrub(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: REDACTED if _SECRET_KEY.search(str(k)) else _scrub(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub(v) for v in value]
    return value


async def record_audit(
    session: AsyncSession,
    *,
    actor_id: str,
    action: str,
    target_type: str,
    target_id: str,
    details: dict[str, Any] | None = None,
) -> str:
    """Append one audit entry in the session's transaction; returns its id.

    `details` must be JSON-serialisable; values under secret-looking keys are redacted.
    """
    audit_id = new_id("aud")
    session.add(
        AuditRow(
            id=audit_id,
            at=utcnow(),
            actor_id=actor_id,
            action=action,
            target_type=target_type,
            target_id=target_id,
            details=_scrub(details) if details is not None else None,
        )
    )
    await session.flush()
    return audit_id
