"""A `confirm` tool call asks a human: the approval is stored, and the call waits.

Asking twice for the same call (a replay of the run, or the call racing itself) never
stores a second approval: the first one answers, and once it is decided its decision
answers without running anything again.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel

from app.domain.tooling import ApprovalNeeded, BackgroundStarted, CallSite, ToolOutcome
from app.store.database import Database
from app.store.repos.approvals import ApprovalRecord
from app.toolruntime.outcomes import REJECTED, error_outcome
from app.tools.base import ServerTool, visible_args
from app.tools.pinning import args_hash

CALL_ID_TAKEN = "This tool call id was already used with other arguments."


async def ask_approval(
    db: Database,
    site: CallSite,
    tool: ServerTool[Any],
    args: BaseModel,
    *,
    expires_at: datetime,
) -> ToolOutcome | ApprovalNeeded | BackgroundStarted:
    pinned = args.model_dump(mode="json")
    digest = args_hash(pinned)
    async with db.write() as tx:
        record = await tx.approvals.ask(
            site,
            tool_name=tool.name,
            args=pinned,
            args_hash=digest,
            summary=tool.summary(args),
            expires_at=expires_at,
        )
    if record is None or record.args_hash != digest or record.tool_name != tool.name:
        return error_outcome(CALL_ID_TAKEN)
    return approval_answer(tool, record)


def approval_answer(
    tool: ServerTool[Any], record: ApprovalRecord
) -> ToolOutcome | ApprovalNeeded | BackgroundStarted:
    """What the stored approval of a call says to the model now."""
    shown = visible_args(tool, record.args)
    if record.status == "pending" and record.expires_at <= datetime.now(UTC):
        return error_outcome("The approval for this call expired.", args=shown)
    if record.status == "pending":
        return ApprovalNeeded(
            approval_id=record.id,
            summary=record.summary,
            expires_at=record.expires_at.timestamp(),
            args=shown,
        )
    # A replay of a decided call: the stored decision answers, nothing runs again.
    if record.status == "rejected":
        return error_outcome(REJECTED, args=shown, reason=record.reason)
    if record.status == "cancelled":
        return error_outcome("The call was cancelled before anyone decided.", args=shown)
    if record.outcome_status == "background":  # approved, running as this job
        job_id = str(dict(record.result or {}).get("background_job", ""))
        return BackgroundStarted(job_id, f"{record.summary}: running in the background", shown)
    if record.outcome_status == "success":
        return ToolOutcome(status="success", result=record.result, mutates=tool.mutates, args=shown)
    result = record.result if isinstance(record.result, dict) else {}
    return error_outcome(str(result.get("error", "The tool did not finish.")), args=shown)
