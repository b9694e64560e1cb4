"""A call proposed rather than run: queued on its conversation, answered with a receipt.

A `propose` tool always proposes; in a propose-mode conversation every mutating tool
does too (a `confirm` tool stays `confirm`). Reads keep working on live data. Proposing
the same call again (a replay) answers the stored proposal, never a second one.
"""

from __future__ import annotations

import uuid
from typing import Any

from pydantic import BaseModel

from app.domain.tooling import CallSite, ToolOutcome
from app.store.database import Database
from app.store.repos.proposals import ProposalRecord
from app.toolruntime.outcomes import error_outcome
from app.tools.base import PROVISIONAL_PREFIX, ServerTool, visible_args


async def propose(
    db: Database, site: CallSite, tool: ServerTool[Any], args: BaseModel, *, position: int
) -> ToolOutcome:
    """Queue the call at `position` (call order, which the batch is applied in)."""
    pinned = args.model_dump(mode="json")
    shown = visible_args(tool, pinned)
    if site.conversation_id is None:
        return error_outcome(
            f"`{tool.name}` can only be proposed inside a conversation.", args=shown
        )
    owner = site.caller.user_id
    async with db.write() as tx:
        # One proposer of this conversation at a time, so `queued` is exact.
        if not await tx.conversations.lock(owner, site.conversation_id):
            return error_outcome("The conversation no longer exists.", args=shown)
        record = await tx.proposals.by_call(owner, site.run_id, site.tool_call_id)
        if record is None:
            record = await tx.proposals.add(
                site,
                tool_name=tool.name,
                args=pinned,
                summary=tool.summary(args),
                provisional_id=(
                    f"{PROVISIONAL_PREFIX}{uuid.uuid4().hex}" if tool.creates else None
                ),
                position=position,
            )
        queued = await tx.proposals.count_pending(owner, site.conversation_id)
    return ToolOutcome(status="success", result=receipt(record, queued), args=shown)


def receipt(record: ProposalRecord, queued: int) -> dict[str, Any]:
    """The honest answer a proposed call gives the model: nothing was applied yet."""
    answer: dict[str, Any] = {
        "proposed": True,
        "proposal_id": record.id,
        "queued": queued,
        "summary": record.summary,
        "note": "Not applied yet: a human must approve the proposal queue.",
    }
    if record.provisional_id is not None:
        answer["provisional_id"] = record.provisional_id
    return answer
