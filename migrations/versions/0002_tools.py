"""Tool tables: approvals, proposals and their batches, the example knowledge graph.

Revision ID: 0002_tools
Revises: 0001_core
Create Date: 2026-11-29

Keep in step with `app/store/tool_tables.py`: the migration test compares the two.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0002_tools"
down_revision: str | Sequence[str] | None = "0001_core"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _json() -> sa.types.TypeEngine[object]:
    return sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def _ts() -> sa.DateTime:
    return sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "tool_approvals",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("owner_id", sa.String(length=255), nullable=False),
        sa.Column("conversation_id", sa.String(length=64), nullable=True),
        sa.Column("run_id", sa.String(length=64), nullable=False),
        sa.Column("tool_call_id", sa.String(length=128), nullable=False),
        sa.Column("tool_name", sa.String(length=64), nullable=False),
        sa.Column("args", _json(), nullable=False),
        sa.Column("args_hash", sa.String(length=64), nullable=False),
        sa.Column("scope", _json(), nullable=False),
        sa.Column("model_id", sa.String(length=255), nullable=False),
        sa.Column("summary", sa.Text(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("created_at", _ts(), nullable=False),
        sa.Column("expires_at", _ts(), nullable=False),
        sa.Column("decided_at", _ts(), nullable=True),
        sa.Column("decided_by", sa.String(length=255), nullable=True),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("outcome_status", sa.String(length=16), nullable=True),
        sa.Column("result", _json(), nullable=True),
        sa.ForeignKeyConstraint(
            ["conversation_id"],
            ["conversations.id"],
            name="fk_tool_approvals_conversation_id_conversations",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name="pk_tool_approvals"),
        sa.UniqueConstraint("run_id", "tool_call_id", name="uq_tool_approvals_run_call"),
    )
    op.create_index("ix_tool_approvals_conversation_id", "tool_approvals", ["conversation_id"])
    op.create_index(
        "ix_tool_approvals_owner_status", "tool_approvals", ["owner_id", "status", "created_at"]
    )

    op.create_table(
        "tool_proposal_batches",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("owner_id", sa.String(length=255), nullable=False),
        sa.Column("conversation_id", sa.String(length=64), nullable=False),
        sa.Column("approved_by", sa.String(length=255), nullable=False),
        sa.Column("audit_id", sa.String(length=64), nullable=False),
        sa.Column("changes", _json(), nullable=False),
        sa.Column("created_at", _ts(), nullable=False),
        sa.ForeignKeyConstraint(
            ["conversation_id"],
            ["conversations.id"],
            name="fk_tool_proposal_batches_conversation_id_conversations",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name="pk_tool_proposal_batches"),
    )
    op.create_index(
        "ix_tool_proposal_batches_conversation_id", "tool_proposal_batches", ["conversation_id"]
    )

    op.create_table(
        "tool_proposals",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("owner_id", sa.String(length=255), nullable=False),
        sa.Column("conversation_id", sa.String(length=64), nullable=False),
        sa.Column("run_id", sa.String(length=64), nullable=False),
        sa.Column("tool_call_id", sa.String(length=128), nullable=False),
        sa.Column("tool_name", sa.String(length=64), nullable=False),
        sa.Column("args", _json(), nullable=False),
        sa.Column("scope", _json(), nullable=False),
        sa.Column("model_id", sa.String(length=255), nullable=False),
        sa.Column("summary", sa.Text(), nullable=False),
        sa.Column("provisional_id", sa.String(length=64), nullable=True),
        sa.Column("position", sa.BigInteger(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("created_at", _ts(), nullable=False),
        sa.Column("decided_at", _ts(), nullable=True),
        sa.Column("batch_id", sa.String(length=64), nullable=True),
        sa.Column("result", _json(), nullable=True),
        sa.ForeignKeyConstraint(
            ["conversation_id"],
            ["conversations.id"],
            name="fk_tool_proposals_conversation_id_conversations",
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["batch_id"],
            ["tool_proposal_batches.id"],
            name="fk_tool_proposals_batch_id_tool_proposal_batches",
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name="pk_tool_proposals"),
        sa.UniqueConstraint("provisional_id", name="uq_tool_proposals_provisional_id"),
        sa.UniqueConstraint("run_id", "tool_call_id", name="uq_tool_proposals_run_call"),
    )
    op.create_index("ix_tool_proposals_owner_id", "tool_proposals", ["owner_id"])
    op.create_index(
        "ix_tool_proposals_queue", "tool_proposals", ["conversation_id", "status", "position"]
    )

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
    op.drop_table("tool_proposals")
    op.drop_table("tool_proposal_batches")
    op.drop_table("tool_approvals")
