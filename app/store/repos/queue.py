"""The review queue's change feed: written by the approval and proposal repositories in
the transaction of the change itself, read by the queue's stream and its `GET`.

An event says what happened to one item (`added`, `decided`, `expired`, `applied`,
`undone`) and how many items wait for the user afterwards. Numbers come from the user's
`queue_heads` row (see `app.store.tables.queue`): taking one locks that row until the
change commits, so events become visible in sequence order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Literal

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from app.store.dialect_insert import conflict_insert
from app.store.tables.queue import QueueEventRow, QueueHeadRow
from app.store.tables.tools import ApprovalRow, ProposalRow
from app.store.tables.types import utcnow

QueueKind = Literal["added", "decided", "expired", "applied", "undone"]
ItemType = Literal["approval", "proposal"]


@dataclass(frozen=True, slots=True)
class QueueItem:
    """One approval or proposal as the feed shows it."""

    item_type: ItemType
    id: str
    conversation_id: str | None
    tool_name: str
    summary: str
    status: str
    created_at: datetime
    expires_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class Pending:
    approvals: int
    proposals: int

    @property
    def total(self) -> int:
        return self.approvals + self.proposals


@dataclass(frozen=True, slots=True)
class QueueEvent:
    seq: int
    kind: str
    item: dict[str, Any]
    pending: dict[str, int]
    created_at: datetime


def approval_item(row: ApprovalRow) -> QueueItem:
    return QueueItem(
        "approval",
        row.id,
        row.conversation_id,
        row.tool_name,
        row.summary,
        row.status,
        row.created_at,
        row.expires_at,
    )


def proposal_item(row: ProposalRow) -> QueueItem:
    return QueueItem(
        "proposal",
        row.id,
        row.conversation_id,
        row.tool_name,
        row.summary,
        row.status,
        row.created_at,
    )


def _item_json(item: QueueItem) -> dict[str, Any]:
    return {
        "type": item.item_type,
        "id": item.id,
        "conversation_id": item.conversation_id,
        "tool_name": item.tool_name,
        "summary": item.summary,
        "status": item.status,
        "created_at": item.created_at.isoformat(),
        "expires_at": item.expires_at.isoformat() if item.expires_at else None,
    }


class QueueRepo:
    def __init__(self, session: AsyncSession) -> None:
        self._session = session

    async def pending(self, user_id: str, *, now: datetime) -> Pending:
        approvals = await self._session.scalar(
            select(func.count())
            .select_from(ApprovalRow)
            .where(
                ApprovalRow.owner_id == user_id,
                ApprovalRow.status == "pending",
                ApprovalRow.expires_at > now,
            )
        )
        proposals = await self._session.scalar(
            select(func.count())
            .select_from(ProposalRow)
            .where(ProposalRow.owner_id == user_id, ProposalRow.status == "pending")
        )
        return Pending(approvals=int(approvals or 0), proposals=int(proposals or 0))

    async def pending_items(self, user_id: str, *, now: datetime) -> list[QueueItem]:
        """Everything waiting for the user, oldest first: approvals, then proposals."""
        approvals = await self._session.scalars(
            select(ApprovalRow)
            .where(
                ApprovalRow.owner_id == user_id,
                ApprovalRow.status == "pending",
                ApprovalRow.expires_at > now,
            )
            .order_by(ApprovalRow.created_at, ApprovalRow.id)
        )
        proposals = await self._session.scalars(
            select(ProposalRow)
            .where(ProposalRow.owner_id == user_id, ProposalRow.status == "pending")
            .order_by(ProposalRow.position, ProposalRow.created_at, ProposalRow.id)
        )
        return [approval_item(r) for r in approvals] + [proposal_item(r) for r in proposals]

    async def head(self, user_id: str) -> int:
        """The user's last sequence number (0: no event yet)."""
        seq = await self._session.scalar(
            select(QueueHeadRow.seq).where(QueueHeadRow.user_id == user_id)
        )
        return int(seq or 0)

    async def record(self, user_id: str, kind: QueueKind, items: Sequence[QueueItem]) -> None:
        """Append one event per item, in this transaction; an item's kind is written once."""
        if not items:
            return
        last = await self._take(user_id, len(items))
        known = set(
            await self._session.scalars(
                select(QueueEventRow.item_id).where(
                    QueueEventRow.kind == kind,
                    QueueEventRow.item_id.in_([i.id for i in items]),
                )
            )
        )
        now = utcnow()
        counts = await self.pending(user_id, now=now)
        pending = {
            "approvals": counts.approvals,
            "proposals": counts.proposals,
            "total": counts.total,
        }
        first = last - len(items) + 1
        for offset, item in enumerate(items):
            if item.id in known:
                continue  # its number stays unused: readers never count on contiguity
            self._session.add(
                QueueEventRow(
                    user_id=user_id,
                    seq=first + offset,
                    kind=kind,
                    item_type=item.item_type,
                    item_id=item.id,
                    conversation_id=item.conversation_id,
                    data={"item": _item_json(item), "pending": pending},
                    created_at=now,
                )
            )
        await self._session.flush()

    async def _take(self, user_id: str, n: int) -> int:
        """Reserve `n` numbers; returns the last. Locks the head row until commit."""
        stmt = (
            conflict_insert(self._session, QueueHeadRow)
            .values(user_id=user_id, seq=n)
            .on_conflict_do_update(index_elements=["user_id"], set_={"seq": QueueHeadRow.seq + n})
            .returning(QueueHeadRow.seq)
        )
        return int((await self._session.execute(stmt)).scalar_one())

    async def after(self, user_id: str, seq: int, *, limit: int = 200) -> list[QueueEvent]:
        rows = await self._session.scalars(
            select(QueueEventRow)
            .where(QueueEventRow.user_id == user_id, QueueEventRow.seq > seq)
            .order_by(QueueEventRow.seq)
            .limit(limit)
        )
        return [
            QueueEvent(r.seq, r.kind, r.data["item"], r.data["pending"], r.created_at) for r in rows
        ]

    async def expire_due(self, user_id: str, *, now: datetime) -> None:
        """Write `expired` for pending approvals whose time ran out (nothing writes when
        time passes, so readers notice it); once per approval."""
        announced = select(QueueEventRow.item_id).where(
            QueueEventRow.kind == "expired", QueueEventRow.user_id == user_id
        )
        rows = await self._session.scalars(
            select(ApprovalRow)
            .where(
                ApprovalRow.owner_id == user_id,
                ApprovalRow.status == "pending",
                ApprovalRow.expires_at <= now,
                ApprovalRow.id.not_in(announced),
            )
            .order_by(ApprovalRow.expires_at, ApprovalRow.id)
        )
        due = [approval_item(r) for r in rows]
        await self.record(user_id, "expired", [replace(i, status="expired") for i in due])
