"""The example knowledge graph's tables: `graph_nodes`, `graph_edges`.

Revision ID: graph_0001
Revises: (a root of its own: branch `graph_example`)
Depends on: 0001_core
Create Date: 2026-12-02

Keep in step with `app/examples/graph/tables.py`: the migration tests compare the two.

Why a branch of its own, in the example's own version directory, and not a core revision:
the core's chain is what every deployment runs, and a deployment with the example off must
carry none of it (no graph tables in a fresh database). Alembic resolves revisions from
several version directories; `app.store.migrate` brings this directory to head only where
the container switches the example on, and otherwise merely knows it (so a database that
ran it once still migrates after the example is switched off, tables and rows untouched).
The same layout serves any deployer's tool package with tables: a `migrations/` package
beside its `register`, with a root revision and a branch label of its own.

Why `depends_on = "0001_core"`: the graph's tables point at no core table, but they live in
the service's database and are meaningless without one. The dependency makes
`alembic upgrade graph_example@head` build the core first, and a downgrade of the core to
base take this branch down first, so Alembic never records the example without the core
under it. It names the core's root rather than its current head so that later core
revisions never reorder this one.

Adoption: before the example moved out of the core, `0002_tools` created these same tables.
A database migrated then already has them, with rows; this revision adopts tables it finds
(creating only what is missing) instead of failing or replacing them, so such a database
upgrades with no data loss.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "graph_0001"
down_revision: str | Sequence[str] | None = None
branch_labels: str | Sequence[str] | None = ("graph_example",)
depends_on: str | Sequence[str] | None = "0001_core"


def _json() -> sa.types.TypeEngine[Any]:
    return sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def _ts() -> sa.DateTime:
    return sa.DateTime(timezone=True)


def _absent(table: str) -> bool:
    return not sa.inspect(op.get_bind()).has_table(table)


def upgrade() -> None:
    if _absent("graph_nodes"):
        op.create_table(
            "graph_nodes",
            sa.Column("id", sa.String(length=64), nullable=False),
            sa.Column("scope_key", sa.String(length=64), nullable=False),
            sa.Column("label", sa.String(length=128), nullable=False),
            sa.Column("name", sa.String(length=255), nullable=False),
            sa.Column("properties", _json(), nullable=False),
            sa.Column("created_at", _ts(), nullable=False),
            sa.PrimaryKeyConstraint("id", name="pk_graph_nodes"),
        )
        op.create_index("ix_graph_nodes_scope_name", "graph_nodes", ["scope_key", "name"])

    if _absent("graph_edges"):
        op.create_table(
            "graph_edges",
            sa.Column("id", sa.String(length=64), nullable=False),
            sa.Column("scope_key", sa.String(length=64), nullable=False),
            sa.Column("source_id", sa.String(length=64), nullable=False),
            sa.Column("target_id", sa.String(length=64), nullable=False),
            sa.Column("relation", sa.String(length=128), nullable=False),
            sa.Column("created_at", _ts(), nullable=False),
            sa.ForeignKeyConstraint(
                ["source_id"],
                ["graph_nodes.id"],
                name="fk_graph_edges_source_id_graph_nodes",
                ondelete="CASCADE",
            ),
            sa.ForeignKeyConstraint(
                ["target_id"],
                ["graph_nodes.id"],
                name="fk_graph_edges_target_id_graph_nodes",
                ondelete="CASCADE",
            ),
            sa.PrimaryKeyConstraint("id", name="pk_graph_edges"),
        )
        op.create_index("ix_graph_edges_scope", "graph_edges", ["scope_key"])
        op.create_index("ix_graph_edges_source_id", "graph_edges", ["source_id"])
        op.create_index("ix_graph_edges_target_id", "graph_edges", ["target_id"])


def downgrade() -> None:
    op.drop_table("graph_edges")
    op.drop_table("graph_nodes")
