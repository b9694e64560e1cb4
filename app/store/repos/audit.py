"""The audit log: who did what to which object.

Written in the caller's transaction (`record_audit`, or `Tx.audit`), so the record and
the change it describes commit together; read by admins, newest first (`list_audit`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select, tuple_
from sqlalchemy.ext.asyncio import AsyncSession

from app.domain.errors import InvalidRequest
from app.store.repos.keyset import cursor_id, cursor_instant
from app.store.tables.core import AuditRow
from app.store.tables.types import new_id, utcnow

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


@dataclass(frozen=True, slots=True)
class AuditRecord:
    id: str
    at: datetime
    actor_id: str
    action: str
    target_type: str
    target_id: str
    details: dict[str, Any] | None


@dataclass(frozen=True, slots=True)
class AuditPage:
    items: list[AuditRecord]
    next_cursor: str | None


def _cursor(record: AuditRecord) -> str:
    return f"{record.at.isoformat()}|{record.id}"


def _parse_cursor(cursor: str) -> tuple[datetime, str]:
    at, _, audit_id = cursor.partition("|")
    try:
        return cursor_instant(at), cursor_id(audit_id)
    except ValueError as exc:
        raise InvalidRequest("Invalid cursor.", param="cursor") from exc


async def list_audit(
    session: AsyncSession,
    *,
    limit: int = 50,
    cursor: str | None = None,
    actor_id: str | None = None,
    action: str | None = None,
    target_type: str | None = None,
    target_id: str | None = None,
) -> AuditPage:
    """Newest first, keyset-paginated by (at, id)."""
    query = select(AuditRow).order_by(AuditRow.at.desc(), AuditRow.id.desc()).limit(limit + 1)
    if cursor is not None:
        at, audit_id = _parse_cursor(cursor)
        query = query.where(tuple_(AuditRow.at, AuditRow.id) < tuple_(at, audit_id))
    for column, value in (
        (AuditRow.actor_id, actor_id),
        (AuditRow.action, action),
        (AuditRow.target_type, target_type),
        (AuditRow.target_id, target_id),
    ):
        if value is not None:
            query = query.where(column == value)
    rows = list(await session.scalars(query))
    items = [
        AuditRecord(
            id=r.id,
            at=r.at,
            actor_id=r.actor_id,
            action=r.action,
            target_type=r.target_type,
            target_id=r.target_id,
            details=r.details,
        )
        for r in rows[:limit]
    ]
    return AuditPage(items, _cursor(items[-1]) if len(rows) > limit and items else None)
