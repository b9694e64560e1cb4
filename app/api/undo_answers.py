"""How an undo answers, the same whether it is asked of a conversation
(`app.api.routes.proposals`) or of a workspace (`app.api.routes.workspace_undo`): its
documented refusals and the translation of its results into bodies."""

from __future__ import annotations

from typing import Any

from app.api.schemas.proposals import (
    BatchList,
    BatchProposalOut,
    BatchSummaryOut,
    UndoneOut,
    UndoOut,
)
from app.toolruntime.undo import BatchView, UndoResult

UNDO_RESPONSES: dict[int | str, dict[str, Any]] = {
    403: {"description": "not_approver: only the approver or an admin may undo."},
    404: {"description": "batch_not_found: no applied batch (or not this one)."},
    409: {
        "description": (
            "undo_conflict (an `entity` changed since, with the `proposal_id`), "
            "not_undoable, batch_already_undone or not_last_batch: nothing undone."
        )
    },
}


def undo_out(result: UndoResult) -> UndoOut:
    return UndoOut(
        batch_id=result.batch_id,
        audit_id=result.audit_id,
        undone=[
            UndoneOut(proposal_id=c.proposal_id, tool_name=c.tool_name, entities=c.entities)
            for c in result.undone
        ],
    )


def batch_list(views: list[BatchView]) -> BatchList:
    return BatchList(
        data=[
            BatchSummaryOut(
                batch_id=v.batch.id,
                status=v.status,
                approved_by=v.batch.approved_by,
                audit_id=v.batch.audit_id,
                created_at=v.batch.created_at,
                proposals=[
                    BatchProposalOut(
                        id=p.id, tool_name=p.tool_name, summary=p.summary, status=p.status
                    )
                    for p in v.proposals
                ],
            )
            for v in views
        ]
    )
