"""The example graph's repository: the graph of ONE scope per instance.

Like the service's own repositories it wraps one session and never commits: the tool
runtime owns the transaction (one per call, one for a whole proposal batch), and hands it
to the handler as `ToolContext.tx`; `for_call` takes the session from there.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
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

    # -- undo: state digests, snapshots, reverts -------------------------------------------

    async def _incident(self, node_id: str) -> list[GraphEdgeRow]:
        rows = await self._session.scalars(
            select(GraphEdgeRow)
            .where(
                GraphEdgeRow.scope_key == self._scope,
                or_(GraphEdgeRow.source_id == node_id, GraphEdgeRow.target_id == node_id),
            )
            .order_by(GraphEdgeRow.id)
            .with_for_update()
        )
        return list(rows)

    async def digests(self, entities: Sequence[str]) -> dict[str, str | None]:
        """`node <id>` / `edge <id>` -> a digest of its state (None: gone). A node's state
        includes its edges, so an edge someone added to it since counts as a change.
        Rows are locked (Postgres) so nothing changes them before the undo commits."""
        out: dict[str, str | None] = {}
        for entity in entities:
            kind, _, entity_id = entity.partition(" ")
            state: Any = None
            if kind == "node":
                node = await self._session.scalar(
                    select(GraphNodeRow)
                    .where(GraphNodeRow.id == entity_id, GraphNodeRow.scope_key == self._scope)
                    .with_for_update()
                )
                if node is not None:
                    edges = [_edge_state(e) for e in await self._incident(entity_id)]
                    state = [node.label, node.name, node.properties, edges]
            elif kind == "edge":
                edge = await self._session.scalar(
                    select(GraphEdgeRow)
                    .where(GraphEdgeRow.id == entity_id, GraphEdgeRow.scope_key == self._scope)
                    .with_for_update()
                )
                state = _edge_state(edge) if edge is not None else None
            out[entity] = None if state is None else _digest(state)
        return out

    async def snapshot(self, node_id: str) -> dict[str, Any] | None:
        """A node and its edges as rows, to restore what a delete removes."""
        node = await self._session.scalar(
            select(GraphNodeRow).where(
                GraphNodeRow.id == node_id, GraphNodeRow.scope_key == self._scope
            )
        )
        if node is None:
            return None
        return {
            "node": {
                "id": node.id,
                "label": node.label,
                "name": node.name,
                "properties": node.properties,
                "created_at": node.created_at.isoformat(),
            },
            "edges": [
                {**_edge_state(e), "created_at": e.created_at.isoformat()}
                for e in await self._incident(node_id)
            ],
        }

    async def restore(self, snapshot: dict[str, Any]) -> None:
        """Put back a node and its edges exactly as `snapshot` saw them (same ids)."""
        node = snapshot["node"]
        self._session.add(
            GraphNodeRow(
                id=node["id"],
                scope_key=self._scope,
                label=node["label"],
                name=node["name"],
                properties=node["properties"],
                created_at=datetime.fromisoformat(node["created_at"]),
            )
        )
        await self._session.flush()
        for edge in snapshot["edges"]:
            self._session.add(
                GraphEdgeRow(
                    id=edge["id"],
                    scope_key=self._scope,
                    source_id=edge["source_id"],
                    target_id=edge["target_id"],
                    relation=edge["relation"],
                    created_at=datetime.fromisoformat(edge["created_at"]),
                )
            )
        await self._session.flush()

    async def delete_edge(self, edge_id: str) -> bool:
        result = await self._session.execute(
            delete(GraphEdgeRow).where(
                GraphEdgeRow.id == edge_id, GraphEdgeRow.scope_key == self._scope
            )
        )
        return rowcount(result) == 1

    async def replace_properties(self, node_id: str, properties: dict[str, Any]) -> bool:
        row = await self._session.scalar(
            select(GraphNodeRow).where(
                GraphNodeRow.id == node_id, GraphNodeRow.scope_key == self._scope
            )
        )
        if row is None:
            return False
        row.properties = properties
        await self._session.flush()
        return True


def _edge_state(edge: GraphEdgeRow) -> dict[str, Any]:
    return {
        "id": edge.id,
        "source_id": edge.source_id,
        "target_id": edge.target_id,
        "relation": edge.relation,
    }


def _digest(state: Any) -> str:
    return hashlib.sha256(json.dumps(state, sort_keys=True, default=str).encode()).hexdigest()
