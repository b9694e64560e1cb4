"""A conversation's proposal queue and the batches it is applied in.

Like every repository it wraps one session and never commits; every query carries its
owner filter, and unknown ids are `NotFound`. Claiming proposals for a batch is a
conditional UPDATE, so two concurrent approvers cannot both apply one proposal.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from sqlalchemy import Select, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from app.domain.errors import Conflict, NotFound
from app.domain.tooling import CallSite
from app.store.repos.call_sites import call_site_columns
from app.store.repos.queue import QueueKind, QueueRepo, proposal_item
from app.store.tables.core import ConversationRow
from app.store.tables.tools import ProposalBatchRow, ProposalRow
from app.store.tables.types import new_id, utcnow


@dataclass(frozen=True, slots=True)
class ProposalRecord:
    id: str
    owner_id: str
    conversation_id: str
    run_id: str
    tool_call_id: str
    tool_name: str
    args: dict[str, Any]
    scope: dict[str, Any]
    model_id: str
    summary: str
    provisional_id: str | None
    position: int
    status: str
    created_at: datetime
    decided_at: datetime | None
    batch_id: str | None
    result: Any | None


def _record(row: ProposalRow) -> ProposalRecord:
    return ProposalRecord(
        id=row.id,
        owner_id=row.owner_id,
        conversation_id=row.conversation_id,
        run_id=row.run_id,
        tool_call_id=row.tool_call_id,
        tool_name=row.tool_name,
        args=row.args,
        scope=row.scope,
        model_id=row.model_id,
        summary=row.summary,
        provisional_id=row.provisional_id,
        position=row.position,
        status=row.status,
        created_at=row.created_at,
        decided_at=row.decided_at,
        batch_id=row.batch_id,
        result=row.result,
    )


@dataclass(frozen=True, slots=True)
class BatchRecord:
    id: str
    owner_id: str
    conversation_id: str
    approved_by: str
    audit_id: str
    changes: list[Any]
    created_at: datetime


def _batch(row: ProposalBatchRow) -> BatchRecord:
    return BatchRecord(
        id=row.id,
        owner_id=row.owner_id,
        conversation_id=row.conversation_id,
        approved_by=row.approved_by,
        audit_id=row.audit_id,
        changes=row.changes,
        created_at=row.created_at,
    )


@dataclass(frozen=True, slots=True)
class BatchScope:
    """Where batches are looked for: one conversation, or every conversation bound to a
    workspace (its `scope.workspace_id`, pinned into the tools' `workspace_id`)."""

    kind: Literal["conversation", "workspace"]
    id: str


def _in_scope(query: Select[ProposalBatchRow], scope: BatchScope) -> Select[ProposalBatchRow]:
    if scope.kind == "conversation":
        return query.where(ProposalBatchRow.conversation_id == scope.id)
    return query.where(ProposalBatchRow.conversation_id.in_(_bound_to(scope.id)))


def _bound_to(workspace_id: str) -> Select[str]:
    """The ids of the conversations bound to a workspace."""
    return select(ConversationRow.id).where(
        ConversationRow.scope["workspace_id"].as_string() == workspace_id
    )


def new_batch_id() -> str:
    """The id of a batch about to be applied: its audit record names it before the batch
    row exists (that row names the audit record)."""
    return new_id("batch")


class ProposalRepo:
    def __init__(self, session: AsyncSession) -> None:
        self._session = session

    async def add(
        self,
        site: CallSite,
        *,
        tool_name: str,
        args: dict[str, Any],
        summary: str,
        provisional_id: str | None,
        position: int,
    ) -> ProposalRecord:
        if site.conversation_id is None:
            raise ValueError("a proposal belongs to a conversation")
        row = ProposalRow(
            id=new_id("prop"),
            **call_site_columns(site),
            tool_name=tool_name,
            args=args,
            summary=summary,
            provisional_id=provisional_id,
            position=position,
            status="pending",
            created_at=utcnow(),
            decided_at=None,
            batch_id=None,
            result=None,
        )
        self._session.add(row)
        await self._session.flush()
        await QueueRepo(self._session).record(row.owner_id, "added", [proposal_item(row)])
        return _record(row)

    async def by_call(self, owner_id: str, run_id: str, tool_call_id: str) -> ProposalRecord | None:
        row = await self._session.scalar(
            select(ProposalRow).where(
                ProposalRow.owner_id == owner_id,
                ProposalRow.run_id == run_id,
                ProposalRow.tool_call_id == tool_call_id,
            )
        )
        return _record(row) if row is not None else None

    async def count_pending(self, owner_id: str, conversation_id: str) -> int:
        count = await self._session.scalar(
            select(func.count())
            .select_from(ProposalRow)
            .where(
                ProposalRow.owner_id == owner_id,
                ProposalRow.conversation_id == conversation_id,
                ProposalRow.status == "pending",
            )
        )
        return int(count or 0)

    async def pending(
        self, owner_id: str, conversation_id: str, ids: Sequence[str] | None = None
    ) -> list[ProposalRecord]:
        """The queue in call order; with `ids`, only those (unknown ids are NotFound)."""
        query = select(ProposalRow).where(
            ProposalRow.owner_id == owner_id,
            ProposalRow.conversation_id == conversation_id,
            ProposalRow.status == "pending",
        )
        if ids is not None:
            query = query.where(ProposalRow.id.in_(list(ids)))
        rows = [
            _record(r)
            for r in await self._session.scalars(
                query.order_by(ProposalRow.position, ProposalRow.created_at, ProposalRow.id)
            )
        ]
        if ids is not None and len(rows) != len(set(ids)):
            await self._refuse_missing(owner_id, conversation_id, set(ids) - {r.id for r in rows})
        return rows

    async def _refuse_missing(self, owner_id: str, conversation_id: str, ids: set[str]) -> None:
        """Ids asked for that are not pending: unknown ones are `NotFound`; ones settled
        meanwhile (a concurrent approve or reject) are 409 `proposals_changed`, whichever
        database serialised the two requests."""
        settled = set(
            await self._session.scalars(
                select(ProposalRow.id).where(
                    ProposalRow.owner_id == owner_id,
                    ProposalRow.conversation_id == conversation_id,
                    ProposalRow.id.in_(list(ids)),
                )
            )
        )
        if settled != ids:
            raise NotFound(
                "Proposal not found (or no longer pending).",
                code="proposal_not_found",
                proposal_ids=sorted(ids - settled),
            )
        raise Conflict(
            "Some of these proposals were settled meanwhile; reload the queue.",
            code="proposals_changed",
            proposal_ids=sorted(settled),
        )

    async def mark(self, owner_id: str, ids: Sequence[str], *, status: str, now: datetime) -> int:
        """Move pending proposals to `status`; returns how many this call moved."""
        if not ids:
            return 0
        result = await self._session.execute(
            update(ProposalRow)
            .where(
                ProposalRow.id.in_(list(ids)),
                ProposalRow.owner_id == owner_id,
                ProposalRow.status == "pending",
            )
            .values(status=status, decided_at=now)
            .returning(ProposalRow.id)
            .execution_options(synchronize_session=False)
        )
        moved = list(result.scalars())
        await self._announce(owner_id, moved, "applied" if status == "applied" else "decided")
        return len(moved)

    async def _announce(self, owner_id: str, ids: list[str], kind: QueueKind) -> None:
        """Tell the owner's review queue (`app.store.repos.queue`) what just changed."""
        rows = await self._session.scalars(
            select(ProposalRow)
            .where(ProposalRow.id.in_(ids))
            .order_by(ProposalRow.position, ProposalRow.id)
            .execution_options(populate_existing=True)
        )
        await QueueRepo(self._session).record(owner_id, kind, [proposal_item(r) for r in rows])

    async def set_result(self, proposal_id: str, result: Any) -> None:
        await self._session.execute(
            update(ProposalRow)
            .where(ProposalRow.id == proposal_id)
            .values(result=result)
            .execution_options(synchronize_session=False)
        )

    async def add_batch(
        self,
        *,
        batch_id: str,
        owner_id: str,
        conversation_id: str,
        approved_by: str,
        audit_id: str,
        changes: list[Any],
        proposal_ids: Sequence[str],
    ) -> None:
        """Record an applied batch and link the proposals it applied to it."""
        self._session.add(
            ProposalBatchRow(
                id=batch_id,
                owner_id=owner_id,
                conversation_id=conversation_id,
                approved_by=approved_by,
                audit_id=audit_id,
                changes=changes,
                created_at=utcnow(),
            )
        )
        await self._session.flush()
        await self._session.execute(
            update(ProposalRow)
            .where(ProposalRow.id.in_(list(proposal_ids)), ProposalRow.owner_id == owner_id)
            .values(batch_id=batch_id)
            .execution_options(synchronize_session=False)
        )

    async def last_applied_batch(
        self, scope: BatchScope, owner_id: str | None
    ) -> BatchRecord | None:
        """The scope's newest batch whose proposals are still applied (not undone).
        `owner_id` None: any owner's (an admin's look-up)."""
        still_applied = (
            select(ProposalRow.id)
            .where(ProposalRow.batch_id == ProposalBatchRow.id, ProposalRow.status == "applied")
            .exists()
        )
        query = _in_scope(select(ProposalBatchRow), scope).where(still_applied)
        if owner_id is not None:
            query = query.where(ProposalBatchRow.owner_id == owner_id)
        row = await self._session.scalar(
            query.order_by(ProposalBatchRow.created_at.desc(), ProposalBatchRow.id.desc()).limit(1)
        )
        return _batch(row) if row is not None else None

    async def batch(
        self, batch_id: str, owner_id: str | None, scope: BatchScope | None = None
    ) -> BatchRecord | None:
        query = select(ProposalBatchRow).where(ProposalBatchRow.id == batch_id)
        if scope is not None:
            query = _in_scope(query, scope)
        if owner_id is not None:
            query = query.where(ProposalBatchRow.owner_id == owner_id)
        row = await self._session.scalar(query)
        return _batch(row) if row is not None else None

    async def in_workspace(self, owner_id: str, workspace_id: str) -> bool:
        """Whether any of the owner's conversations is bound to the workspace."""
        found = await self._session.scalar(
            _bound_to(workspace_id).where(ConversationRow.owner_id == owner_id).limit(1)
        )
        return found is not None

    async def of_batch(self, batch_id: str) -> list[ProposalRecord]:
        """The proposals a batch applied, in the order it applied them."""
        rows = await self._session.scalars(
            select(ProposalRow)
            .where(ProposalRow.batch_id == batch_id)
            .order_by(ProposalRow.position, ProposalRow.created_at, ProposalRow.id)
        )
        return [_record(r) for r in rows]

    async def mark_batch(self, batch_id: str, *, status: str, now: datetime) -> int:
        """Move a batch's applied proposals to `status` (`undone`); returns how many moved,
        so of two concurrent undos only one finds anything to move."""
        result = await self._session.execute(
            update(ProposalRow)
            .where(ProposalRow.batch_id == batch_id, ProposalRow.status == "applied")
            .values(status=status, decided_at=now)
            .returning(ProposalRow.id, ProposalRow.owner_id)
            .execution_options(synchronize_session=False)
        )
        moved = list(result.all())
        if moved:
            await self._announce(moved[0].owner_id, [m.id for m in moved], "undone")
        return len(moved)

    async def batches(self, owner_id: str, scope: BatchScope, *, limit: int) -> list[BatchRecord]:
        """The scope's applied batches, newest first."""
        rows = await self._session.scalars(
            _in_scope(select(ProposalBatchRow), scope)
            .where(ProposalBatchRow.owner_id == owner_id)
            .order_by(ProposalBatchRow.created_at.desc(), ProposalBatchRow.id.desc())
            .limit(limit)
        )
        return [_batch(r) for r in rows]
