"""Tool tables: approvals, proposals and their batches.

Revision ID: 0002_tools
Revises: 0001_core
Create Date: 2026-11-29

Keep in step with `app/store/tables/tools.py`: the migration test compares the two.

Until the example knowledge graph became a package of its own, this revision also created
its tables (`graph_nodes`, `graph_edges`). Databases migrated then keep them, with their
rows: the example's own first revision (`app/examples/graph/migrations/graph_0001.py`)
adopts tables it finds instead of creating them, and a deployment with the example off
leaves them alone. A fresh database gets them only from that revision.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0002_tools"
down_revision: str | Sequence[str] | None = "0001_core"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _json() -> sa.types.TypeEngine[Any]:
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


def downgrade() -> None:
    op.drop_table("tool_proposals")
    op.drop_table("tool_proposal_batches")
    op.drop_table("tool_approvals")
