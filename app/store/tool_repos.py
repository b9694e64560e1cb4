"""Repositories of the tool layer; every query carries its ownership or scope filter.

Like the core repositories they wrap one `AsyncSession` and never commit. A missing id
and another owner's id raise the same `NotFound`. The state changes that must happen once
(deciding an approval, applying a proposal) are conditional UPDATEs, so two concurrent
deciders cannot both win: Postgres re-checks the WHERE under the row lock, SQLite has one
writer at a time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import delete, func, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from app.domain.errors import NotFound
from app.store.tables import ConversationRow, new_id, utcnow
from app.store.tool_tables import (
    ApprovalRow,
    GraphEdgeRow,
    GraphNodeRow,
    ProposalBatchRow,
    ProposalRow,
)


def _rowcount(result: Any) -> int:
    count: int = result.rowcount
    return count


async def lock_conversation(session: AsyncSession, owner_id: str, conversation_id: str) -> bool:
    """Serialise writers of one conversation's tool state until the transaction ends.

    Postgres: a row lock (`FOR UPDATE`). SQLite has one writer at a time already, as long
    as the transaction has written before it reads what it will base a write on.
    """
    found = await session.scalar(
        select(ConversationRow.id)
        .where(ConversationRow.id == conversation_id, ConversationRow.owner_id == owner_id)
        .with_for_update()
    )
    return found is not None


# -- approvals ---------------------------------------------------------------------------


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


def _approval(row: ApprovalRow) -> ApprovalRecord:
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

    async def create_or_get(
        self,
        *,
        owner_id: str,
        conversation_id: str | None,
        run_id: str,
        tool_call_id: str,
        tool_name: str,
        args: dict[str, Any],
        args_hash: str,
        scope: dict[str, Any],
        model_id: str,
        summary: str,
        expires_at: datetime,
    ) -> ApprovalRecord:
        """The approval of this (run, tool call): an existing one is returned unchanged,
        so asking twice for the same call never yields two approvals."""
        existing = await self._by_call(owner_id, run_id, tool_call_id)
        if existing is not None:
            return _approval(existing)
        row = ApprovalRow(
            id=new_id("appr"),
            owner_id=owner_id,
            conversation_id=conversation_id,
            run_id=run_id,
            tool_call_id=tool_call_id,
            tool_name=tool_name,
            args=args,
            args_hash=args_hash,
            scope=scope,
            model_id=model_id,
            summary=summary,
            status="pending",
            created_at=utcnow(),
            expires_at=expires_at,
            decided_at=None,
            decided_by=None,
            reason=None,
            outcome_status=None,
            result=None,
        )
        self._session.add(row)
        await self._session.flush()
        return _approval(row)

    async def _by_call(self, owner_id: str, run_id: str, tool_call_id: str) -> ApprovalRow | None:
        return await self._session.scalar(
            select(ApprovalRow).where(
                ApprovalRow.owner_id == owner_id,
                ApprovalRow.run_id == run_id,
                ApprovalRow.tool_call_id == tool_call_id,
            )
        )

    async def get(self, owner_id: str, approval_id: str) -> ApprovalRecord:
        row = await self._session.scalar(
            select(ApprovalRow).where(
                ApprovalRow.id == approval_id, ApprovalRow.owner_id == owner_id
            )
        )
        if row is None:
            raise approval_not_found()
        return _approval(row)

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
        return [_approval(r) for r in rows]

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
        return _rowcount(result) == 1

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
            query.values(status="cancelled", decided_at=now).execution_options(
                synchronize_session=False
            )
        )
        return _rowcount(result)

    async def record_outcome(
        self, owner_id: str, approval_id: str, *, outcome_status: str, result: Any
    ) -> None:
        await self._session.execute(
            update(ApprovalRow)
            .where(ApprovalRow.id == approval_id, ApprovalRow.owner_id == owner_id)
            .values(outcome_status=outcome_status, result=result)
            .execution_options(synchronize_session=False)
        )


# -- proposals ---------------------------------------------------------------------------


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


def _proposal(row: ProposalRow) -> ProposalRecord:
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


class ProposalRepo:
    def __init__(self, session: AsyncSession) -> None:
        self._session = session

    async def add(
        self,
        *,
        owner_id: str,
        conversation_id: str,
        run_id: str,
        tool_call_id: str,
        tool_name: str,
        args: dict[str, Any],
        scope: dict[str, Any],
        model_id: str,
        summary: str,
        provisional_id: str | None,
        position: int,
    ) -> ProposalRecord:
        row = ProposalRow(
            id=new_id("prop"),
            owner_id=owner_id,
            conversation_id=conversation_id,
            run_id=run_id,
            tool_call_id=tool_call_id,
            tool_name=tool_name,
            args=args,
            scope=scope,
            model_id=model_id,
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
        return _proposal(row)

    async def by_call(self, owner_id: str, run_id: str, tool_call_id: str) -> ProposalRecord | None:
        row = await self._session.scalar(
            select(ProposalRow).where(
                ProposalRow.owner_id == owner_id,
                ProposalRow.run_id == run_id,
                ProposalRow.tool_call_id == tool_call_id,
            )
        )
        return _proposal(row) if row is not None else None

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
            _proposal(r)
            for r in await self._session.scalars(
                query.order_by(ProposalRow.position, ProposalRow.created_at, ProposalRow.id)
            )
        ]
        if ids is not None and len(rows) != len(set(ids)):
            missing = sorted(set(ids) - {r.id for r in rows})
            raise NotFound(
                "Proposal not found (or no longer pending).",
                code="proposal_not_found",
                proposal_ids=missing,
            )
        return rows

    async def mark(
        self,
        owner_id: str,
        ids: Sequence[str],
        *,
        status: str,
        now: datetime,
        batch_id: str | None = None,
    ) -> int:
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
            .values(status=status, decided_at=now, batch_id=batch_id)
            .execution_options(synchronize_session=False)
        )
        return _rowcount(result)

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
    ) -> None:
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


# -- the example graph ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class NodeRecord:
    id: str
    label: str
    name: str
    properties: dict[str, Any]


@dataclass(frozen=True, slots=True)
class EdgeRecord:
    id: str
    source_id: str
    target_id: str
    relation: str


def _node(row: GraphNodeRow) -> NodeRecord:
    return NodeRecord(id=row.id, label=row.label, name=row.name, properties=row.properties)


def _edge(row: GraphEdgeRow) -> EdgeRecord:
    return EdgeRecord(
        id=row.id, source_id=row.source_id, target_id=row.target_id, relation=row.relation
    )


class GraphRepo:
    """The graph of ONE scope: every query filters by `scope_key`, nothing else reaches."""

    def __init__(self, session: AsyncSession, scope_key: str) -> None:
        self._session = session
        self._scope = scope_key

    async def add_node(self, label: str, name: str, properties: dict[str, Any]) -> NodeRecord:
        row = GraphNodeRow(
            id=new_id("node"),
            scope_key=self._scope,
            label=label,
            name=name,
            properties=properties,
            created_at=utcnow(),
        )
        self._session.add(row)
        await self._session.flush()
        return _node(row)

    async def node(self, node_id: str) -> NodeRecord | None:
        row = await self._session.scalar(
            select(GraphNodeRow).where(
                GraphNodeRow.id == node_id, GraphNodeRow.scope_key == self._scope
            )
        )
        return _node(row) if row is not None else None

    async def nodes_named(self, name: str) -> list[NodeRecord]:
        rows = await self._session.scalars(
            select(GraphNodeRow)
            .where(
                GraphNodeRow.scope_key == self._scope,
                func.lower(GraphNodeRow.name) == name.lower(),
            )
            .order_by(GraphNodeRow.created_at, GraphNodeRow.id)
        )
        return [_node(r) for r in rows]

    async def find(self, *, query: str | None, label: str | None, limit: int) -> list[NodeRecord]:
        stmt = select(GraphNodeRow).where(GraphNodeRow.scope_key == self._scope)
        if query:
            pattern = (
                "%"
                + query.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
                + "%"
            )
            stmt = stmt.where(
                or_(
                    func.lower(GraphNodeRow.name).like(pattern, escape="\\"),
                    func.lower(GraphNodeRow.label).like(pattern, escape="\\"),
                )
            )
        if label:
            stmt = stmt.where(func.lower(GraphNodeRow.label) == label.lower())
        rows = await self._session.scalars(
            stmt.order_by(GraphNodeRow.created_at, GraphNodeRow.id).limit(limit)
        )
        return [_node(r) for r in rows]

    async def all_nodes(self, limit: int) -> list[NodeRecord]:
        return await self.find(query=None, label=None, limit=limit)

    async def edges(self, limit: int) -> list[EdgeRecord]:
        rows = await self._session.scalars(
            select(GraphEdgeRow)
            .where(GraphEdgeRow.scope_key == self._scope)
            .order_by(GraphEdgeRow.created_at, GraphEdgeRow.id)
            .limit(limit)
        )
        return [_edge(r) for r in rows]

    async def connect(self, source_id: str, target_id: str, relation: str) -> EdgeRecord:
        """Both ends must already be nodes of this scope (the caller resolved them)."""
        row = GraphEdgeRow(
            id=new_id("edge"),
            scope_key=self._scope,
            source_id=source_id,
            target_id=target_id,
            relation=relation,
            created_at=utcnow(),
        )
        self._session.add(row)
        await self._session.flush()
        return _edge(row)

    async def set_property(self, node_id: str, key: str, value: Any) -> NodeRecord | None:
        row = await self._session.scalar(
            select(GraphNodeRow).where(
                GraphNodeRow.id == node_id, GraphNodeRow.scope_key == self._scope
            )
        )
        if row is None:
            return None
        row.properties = {**row.properties, key: value}
        await self._session.flush()
        return _node(row)

    async def delete_node(self, node_id: str) -> int:
        """Delete a node of this scope and its edges; returns the edges removed."""
        edges = await self._session.execute(
            delete(GraphEdgeRow).where(
                GraphEdgeRow.scope_key == self._scope,
                or_(GraphEdgeRow.source_id == node_id, GraphEdgeRow.target_id == node_id),
            )
        )
        await self._session.execute(
            delete(GraphNodeRow).where(
                GraphNodeRow.id == node_id, GraphNodeRow.scope_key == self._scope
            )
        )
        return _rowcount(edges)
