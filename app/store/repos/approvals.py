"""Approvals of `confirm` tool calls: asked for once per call, decided once.

Like every repository it wraps one session and never commits. A missing id and another
owner's id raise the same `NotFound`. The changes that must happen once are decided by
the database: asking is an insert that does nothing when the call already has an
approval (`ON CONFLICT DO NOTHING`, so two runs of the same call racing get one row), and
deciding is a conditional UPDATE (Postgres re-checks the WHERE under the row lock, SQLite
has one writer at a time), so two concurrent deciders cannot both win.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from app.domain.errors import NotFound
from app.domain.tooling import CallSite
from app.store.dialect_insert import conflict_insert
from app.store.repos.call_sites import call_site_columns
from app.store.repos.queue import QueueRepo, approval_item
from app.store.repos.rowcount import rowcount
from app.store.tables.tools import ApprovalRow
from app.store.tables.types import new_id, utcnow


@dataclass(frozen=True, slots=True)
class ApprovalRecord:
    id: str
    owner_id: str
    conversation_id: str | None
    run_id: str
    tool_call_id: str
    tool_name: str
    args: dict[str, Any]
    args_hash: str
    scope: dict[str, Any]
    model_id: str
    summary: str
    status: str
    created_at: datetime
    expires_at: datetime
    decided_at: datetime | None
    decided_by: str | None
    reason: str | None
    outcome_status: str | None
    result: Any | None


def _record(row: ApprovalRow) -> ApprovalRecord:
    return ApprovalRecord(
        id=row.id,
        owner_id=row.owner_id,
        conversation_id=row.conversation_id,
        run_id=row.run_id,
        tool_call_id=row.tool_call_id,
        tool_name=row.tool_name,
        args=row.args,
        args_hash=row.args_hash,
        scope=row.scope,
        model_id=row.model_id,
        summary=row.summary,
        status=row.status,
        created_at=row.created_at,
        expires_at=row.expires_at,
        decided_at=row.decided_at,
        decided_by=row.decided_by,
        reason=row.reason,
        outcome_status=row.outcome_status,
        result=row.result,
    )


def approval_not_found() -> NotFound:
    return NotFound("Approval not found.", code="approval_not_found")


class ApprovalRepo:
    def __init__(self, session: AsyncSession) -> None:
        self._session = session

    async def ask(
        self,
        site: CallSite,
        *,
        tool_name: str,
        args: dict[str, Any],
        args_hash: str,
        summary: str,
        expires_at: datetime,
    ) -> ApprovalRecord | None:
        """The approval of this call: asking again (a replay, or the same call racing
        itself) returns the one stored first, unchanged, so a call never has two. None
        when the (run, tool call id) is another owner's (run ids are ours and unique, so
        only a forged call gets there)."""
        owner_id = site.caller.user_id
        values: dict[str, Any] = {
            "id": new_id("appr"),
            **call_site_columns(site),
            "tool_name": tool_name,
            "args": args,
            "args_hash": args_hash,
            "summary": summary,
            "status": "pending",
            "created_at": utcnow(),
            "expires_at": expires_at,
        }
        await self._session.execute(
            conflict_insert(self._session, ApprovalRow)
            .values(**values)
            .on_conflict_do_nothing(index_elements=["run_id", "tool_call_id"])
        )
        row = await self._session.scalar(
            select(ApprovalRow).where(
                ApprovalRow.owner_id == owner_id,
                ApprovalRow.run_id == site.run_id,
                ApprovalRow.tool_call_id == site.tool_call_id,
            )
        )
        if row is not None and row.id == values["id"]:
            await QueueRepo(self._session).record(owner_id, "added", [approval_item(row)])
        return _record(row) if row is not None else None

    async def get(self, owner_id: str, approval_id: str) -> ApprovalRecord:
        row = await self._session.scalar(
            select(ApprovalRow).where(
                ApprovalRow.id == approval_id, ApprovalRow.owner_id == owner_id
            )
        )
        if row is None:
            raise approval_not_found()
        return _record(row)

    async def pending(self, owner_id: str, *, now: datetime) -> list[ApprovalRecord]:
        """The owner's undecided, unexpired approvals across conversations, oldest first."""
        rows = await self._session.scalars(
            select(ApprovalRow)
            .where(
                ApprovalRow.owner_id == owner_id,
                ApprovalRow.status == "pending",
                ApprovalRow.expires_at > now,
            )
            .order_by(ApprovalRow.created_at, ApprovalRow.id)
        )
        return [_record(r) for r in rows]

    async def due(
        self, owner_id: str, conversation_id: str, *, now: datetime
    ) -> list[ApprovalRecord]:
        """The conversation's undecided approvals whose time ran out, oldest first."""
        rows = await self._session.scalars(
            select(ApprovalRow)
            .where(
                ApprovalRow.owner_id == owner_id,
                ApprovalRow.conversation_id == conversation_id,
                ApprovalRow.status == "pending",
                ApprovalRow.expires_at <= now,
            )
            .order_by(ApprovalRow.expires_at, ApprovalRow.id)
        )
        return [_record(r) for r in rows]

    async def unfinished(self, owner_id: str, conversation_id: str) -> list[ApprovalRecord]:
        """The conversation's approvals decided (approved, rejected) whose call's outcome
        is not stored: being run now, or lost to an outage. Oldest decision first."""
        rows = await self._session.scalars(
            select(ApprovalRow)
            .where(
                ApprovalRow.owner_id == owner_id,
                ApprovalRow.conversation_id == conversation_id,
                ApprovalRow.status.in_(("approved", "rejected")),
                ApprovalRow.outcome_status.is_(None),
            )
            .order_by(ApprovalRow.decided_at, ApprovalRow.id)
        )
        return [_record(r) for r in rows]

    async def claim(
        self,
        owner_id: str,
        approval_id: str,
        *,
        status: str,
        decided_by: str,
        now: datetime,
        reason: str | None,
        args: dict[str, Any] | None = None,
    ) -> bool:
        """Move a pending, unexpired approval to `status`; True for exactly one caller."""
        values: dict[str, Any] = {
            "status": status,
            "decided_at": now,
            "decided_by": decided_by,
            "reason": reason,
        }
        if args is not None:
            values["args"] = args
        result = await self._session.execute(
            update(ApprovalRow)
            .where(
                ApprovalRow.id == approval_id,
                ApprovalRow.owner_id == owner_id,
                ApprovalRow.status == "pending",
                ApprovalRow.expires_at > now,
            )
            .values(**values)
            .execution_options(synchronize_session=False)
        )
        if rowcount(result) != 1:
            return False
        await self._announce_decided(owner_id, [approval_id])
        return True

    async def _announce_decided(self, owner_id: str, ids: list[str]) -> None:
        rows = await self._session.scalars(
            select(ApprovalRow)
            .where(ApprovalRow.id.in_(ids))
            .order_by(ApprovalRow.created_at, ApprovalRow.id)
            .execution_options(populate_existing=True)
        )
        await QueueRepo(self._session).record(owner_id, "decided", [approval_item(r) for r in rows])

    async def cancel_pending(
        self,
        owner_id: str,
        *,
        now: datetime,
        approval_id: str | None = None,
        run_id: str | None = None,
    ) -> int:
        """Close pending approvals whose tool call was closed otherwise (a cancelled run):
        they leave the inbox and can no longer be decided."""
        query = update(ApprovalRow).where(
            ApprovalRow.owner_id == owner_id, ApprovalRow.status == "pending"
        )
        if approval_id is not None:
            query = query.where(ApprovalRow.id == approval_id)
        if run_id is not None:
            query = query.where(ApprovalRow.run_id == run_id)
        result = await self._session.execute(
            query.values(status="cancelled", decided_at=now)
            .returning(ApprovalRow.id)
            .execution_options(synchronize_session=False)
        )
        ids = list(result.scalars())
        await self._announce_decided(owner_id, ids)
        return len(ids)

    async def record_outcome(
        self,
        owner_id: str,
        approval_id: str,
        *,
        outcome_status: str,
        result: Any,
        unless_recorded: bool = False,
    ) -> bool:
        """Keep the decided call's outcome; with `unless_recorded`, only when none is kept
        yet. True when it was kept."""
        query = update(ApprovalRow).where(
            ApprovalRow.id == approval_id, ApprovalRow.owner_id == owner_id
        )
        if unless_recorded:
            query = query.where(ApprovalRow.outcome_status.is_(None))
        kept = await self._session.execute(
            query.values(outcome_status=outcome_status, result=result).execution_options(
                synchronize_session=False
            )
        )
        return rowcount(kept) == 1
