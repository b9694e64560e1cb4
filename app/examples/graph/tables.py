"""The example graph's tables, on metadata of its own.

Every row carries the `scope_key` of the conversation scope that wrote it, and every query
filters by it. The tables are declared on `GraphBase`, not on the core's `Base`: importing
the example never adds them to the core's metadata (what the core's migrations are checked
against). Its own revision, `migrations/graph_0001.py`, creates exactly these tables.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Index, MetaData, String
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from app.store.db import NAMING_CONVENTION
from app.store.tables.types import JSONType, UTCDateTime


class GraphBase(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


class GraphNodeRow(GraphBase):
    __tablename__ = "graph_nodes"
    __table_args__ = (Index("ix_graph_nodes_scope_name", "scope_key", "name"),)

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    scope_key: Mapped[str] = mapped_column(String(64))
    label: Mapped[str] = mapped_column(String(128))
    name: Mapped[str] = mapped_column(String(255))
    properties: Mapped[dict[str, Any]] = mapped_column(JSONType)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)


class GraphEdgeRow(GraphBase):
    __tablename__ = "graph_edges"
    __table_args__ = (Index("ix_graph_edges_scope", "scope_key"),)

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    scope_key: Mapped[str] = mapped_column(String(64))
    source_id: Mapped[str] = mapped_column(
        String(64), ForeignKey("graph_nodes.id", ondelete="CASCADE"), index=True
    )
    target_id: Mapped[str] = mapped_column(
        String(64), ForeignKey("graph_nodes.id", ondelete="CASCADE"), index=True
    )
    relation: Mapped[str] = mapped_column(String(128))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
