"""What a human decided while a conversation's run was paused, for the run that continues
it to announce first (`part_update`): a tab that follows the new run sees the decided
cards change without reloading the conversation, and a wire that showed the paused call
only as a request (Responses: `mcp_approval_request`, `mcp_submission_request`) shows it
finished there."""

from __future__ import annotations

from app.domain.events import PartChange, PartUpdateCause
from app.domain.parts import FINAL_TOOL_STATUSES
from app.store.database import Database


async def decided_parts(db: Database, owner_id: str, conversation_id: str) -> list[PartChange]:
    """The last assistant message's parts whose approval a human decided, or whose
    question (a tool asking the user mid-call) a human answered."""
    async with db.read() as tx:
        history = await tx.messages.history(owner_id, conversation_id)
        last = next((m for m in reversed(history) if m.role == "assistant"), None)
        if last is None:
            return []
        changes: list[PartChange] = []
        for part in last.tool_parts():
            if part.data.status not in FINAL_TOOL_STATUSES:
                continue
            if part.data.approvalId is None:
                asked = await tx.elicitations.latest(owner_id, conversation_id, part.id)
                if asked is not None and asked.status == "answered":
                    changes.append(PartChange(last.id, part, "input_answered"))
                continue
            record = await tx.approvals.get(owner_id, part.data.approvalId)
            if record.status in ("approved", "rejected"):
                cause: PartUpdateCause = (
                    "approval_approved" if record.status == "approved" else "approval_rejected"
                )
                changes.append(PartChange(last.id, part, cause))
        return changes
