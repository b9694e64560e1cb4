"""A decision sent again: the answer to a client that retries `POST /api/approvals/{id}`.

The decision commits before the run continues, so a request can fail (a database outage
answers 503) after the approval is decided. A second decision is 409 `already_decided`, but
the client's retry must still find its conversation going on:

    the approval is already ...    the retry says ...    answer (409 already_decided)
    approved / rejected            the same decision     naming the decision and the run that
                                                         continues the conversation (started
                                                         now if none did); the tool never reruns
    approved / rejected            another decision      naming the decision taken
    cancelled, expired             anything              409 as before

The same decision is the same `decision`, `reason` and, for an approval, the same
arguments (as asked when the retry sends none, else the edited ones, scope re-pinned).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from app.domain.parts import ToolPart
from app.store.repos.approvals import ApprovalRecord
from app.store.repos.messages import MessageRepo
from app.toolruntime.stored_parts import WAITING_STATUSES
from app.tools.base import ServerTool
from app.tools.pinning import InvalidArguments, args_hash, pin_and_validate

Decision = Literal["approve", "reject"]
DECIDED = frozenset({"approved", "rejected"})  # what a human decided (not cancelled, expired)


def same_decision(
    tool: ServerTool[Any] | None,
    record: ApprovalRecord,
    decision: Decision,
    args: dict[str, Any] | None,
    reason: str | None,
) -> bool:
    """Whether `record` was decided exactly as this request asks."""
    if record.status != ("approved" if decision == "approve" else "rejected"):
        return False
    if record.reason != reason:
        return False
    if decision == "reject":
        return True
    if args is None:  # approved as asked: the stored arguments still hash to the asked ones
        return args_hash(record.args) == record.args_hash
    if tool is None:
        return False
    try:
        _, pinned = pin_and_validate(tool, args, record.scope)
    except InvalidArguments:
        return False
    return args_hash(pinned) == args_hash(record.args)


@dataclass(frozen=True)
class Standing:
    """Where a decided call stands in its conversation."""

    part: ToolPart
    # Nothing of its message waits and no answer follows it yet: the run may resume.
    ready_to_resume: bool
    # The run that already continued the conversation after it, if one did.
    continued_by: str | None


async def standing(messages: MessageRepo, record: ApprovalRecord) -> Standing | None:
    """The stored call of a decided approval; None when it is not stored."""
    assert record.conversation_id is not None
    stored = await messages.records(record.owner_id, record.conversation_id)
    for index in range(len(stored) - 1, -1, -1):
        message = stored[index].message
        if message.role != "assistant":
            continue
        part = next((p for p in message.tool_parts() if p.id == record.tool_call_id), None)
        if part is None:
            continue
        later = [r for r in stored[index + 1 :] if r.message.role == "assistant"]
        waiting = any(p.data.status in WAITING_STATUSES for p in message.tool_parts())
        return Standing(
            part=part,
            ready_to_resume=not waiting and not later,
            continued_by=later[0].run_id if later else None,
        )
    return None
