"""The example graph's repository: the graph of ONE scope per instance.

Like the service's own repositories it wraps one session and never commits: the tool
runtime owns the transaction (one per call, one for a whole proposal batch), and hands it
to the handler as `ToolContext.tx`; `for_call` takes the session from there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, func, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from app.examples.graph.tables import GraphEdgeRow, GraphNodeRow
from app.store.database import Tx
from app.store.repos.rowcount import rowcount
from app.store.tables.types import new_id, utcnow


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

    @classmethod
    def for_call(cls, tx: object, scope_key: str) -> GraphRepo:
        """The repository on the unit of work a tool call runs in (`ToolContext.tx`)."""
        if not isinstance(tx, Tx):
            raise TypeError("the graph tools run inside the service's unit of work")
        return cls(tx.session, scope_key)

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
        return rowcount(edges)
