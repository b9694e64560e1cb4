"""The stored tool parts of calls settled after their run: a proposal batch applied, rejected
or undone, an approval decided, a question answered, a background job ended. The part then
says what happened (a reload shows the decided card, and the model reads it on the next
turn), not the receipt's "Not applied yet"; the conversation's feed carries the change to
every open tab, and a person's decision is audited with the call it settled."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from app.domain.events import PartChange, PartUpdateCause
from app.domain.parts import ToolPart
from app.store.database import Tx
from app.store.repos.feed import PartEntry
from app.store.repos.proposals import ProposalRecord
from app.toolruntime.outcomes import CallPlace

APPLIED_NOTE = "Applied: a human approved the proposal queue."
REJECTED_NOTE = "Rejected: a human declined the proposal; nothing was applied."
UNDONE_NOTE = "Undone: a human took the applied change back."


async def settle_proposal_parts(
    tx: Tx,
    owner_id: str,
    conversation_id: str,
    settled: Mapping[str, tuple[ProposalRecord, Any]],
    cause: PartUpdateCause,
) -> list[PartChange]:
    """Rewrite the parts of `settled` (tool call id -> (proposal, applied result)) in the
    conversation's stored messages; returns the changed parts."""
    changes: list[PartChange] = []
    entries: list[PartEntry] = []
    for stored in await tx.messages.records(owner_id, conversation_id):
        message = stored.message
        if message.role != "assistant":
            continue
        content = message.parts()
        hit = False
        for index, part in enumerate(content):
            if isinstance(part, ToolPart) and part.id in settled:
                proposal, result = settled[part.id]
                settled_part = _settled(part, proposal, result, cause)
                content[index] = settled_part
                changes.append(PartChange(message.id, settled_part, cause))
                entries.append(feed_entry(f"{cause}:{proposal.id}", proposal.run_id, changes[-1]))
                hit = True
        if hit:
            updated = message.model_copy(update={"content": content})
            await tx.messages.upsert(owner_id, conversation_id, updated, run_id=stored.run_id)
    if entries:  # every open tab upserts them; the lock numbers the feed in commit order
        await tx.conversations.lock(owner_id, conversation_id)
        await tx.feed.record_parts(conversation_id, entries)
    return changes


class SettledCall(CallPlace, Protocol):
    """A stored call (approval, question, job) whose card is settled: where it was made
    and which tool it called."""

    @property
    def tool_name(self) -> str: ...


@dataclass(frozen=True, slots=True)
class CardAudit:
    """The audit record of a person's decision on a card; the call site's details (its
    conversation, run, tool call id and tool) are added to `details`."""

    actor_id: str
    action: str
    target_type: str
    target_id: str
    details: Mapping[str, Any] = field(default_factory=dict)


async def settle_card(
    tx: Tx,
    call: SettledCall,
    change: PartChange | None,
    *,
    key: str,
    audit: CardAudit | None = None,
) -> None:
    """Record a settled card in the caller's unit of work: the feed entry of `change` (none
    when no stored part changed, as for a stateless run's approval; the caller holds the
    conversation's write lock, which numbers the feed in commit order) and the audit of
    the decision with the call site's details. `key` names the change, so it is fed once."""
    if change is not None:
        assert call.conversation_id is not None
        await tx.feed.record_parts(call.conversation_id, [feed_entry(key, call.run_id, change)])
    if audit is not None:
        site = {
            "conversation_id": call.conversation_id,
            "run_id": call.run_id,
            "tool_call_id": call.tool_call_id,
            "tool": call.tool_name,
        }
        await tx.audit(
            actor_id=audit.actor_id,
            action=audit.action,
            target_type=audit.target_type,
            target_id=audit.target_id,
            details={**site, **audit.details},
        )


def feed_entry(key: str, run_id: str | None, change: PartChange) -> PartEntry:
    """The feed's record of a changed part (`key` names the change, so it is written once)."""
    return PartEntry(
        key=key,
        run_id=run_id,
        message_id=change.message_id,
        part=change.part.model_dump(mode="json"),
        cause=change.cause,
    )


def _settled(part: ToolPart, proposal: ProposalRecord, result: Any, cause: str) -> ToolPart:
    receipt = part.data.result if isinstance(part.data.result, dict) else {}
    if cause == "proposal_applied":
        answer = {**receipt, "applied": True, "result": result, "note": APPLIED_NOTE}
        data = part.data.model_copy(update={"status": "success", "result": answer})
    elif cause == "proposal_undone":
        answer = {**receipt, "undone": True, "note": UNDONE_NOTE}
        data = part.data.model_copy(
            update={"status": "cancelled", "result": answer, "bodyContent": UNDONE_NOTE}
        )
    else:
        answer = {**receipt, "rejected": True, "note": REJECTED_NOTE}
        data = part.data.model_copy(
            update={"status": "cancelled", "result": answer, "bodyContent": REJECTED_NOTE}
        )
    assert proposal.tool_call_id == part.id
    return ToolPart(id=part.id, data=data)
