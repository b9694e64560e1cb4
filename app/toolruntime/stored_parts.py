"""A stored call's tool part (an approval's, a question's): found in its conversation's
messages and rewritten in place, with the message's metadata saying what it still waits
for (a person: `requires_action`; a background job: `awaiting_background`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from app.domain.messages import Message
from app.domain.parts import ToolPart, awaiting
from app.domain.tooling import BackgroundStarted, ToolOutcome
from app.store.database import Tx
from app.store.repos.messages import MessageRepo
from app.toolruntime.outcomes import CallPlace

WAITING_STATUSES = frozenset({"loading", "waitingConfirmation", "waitingSubmission"})
# What waits for a person (an approval, an answer, the browser's tool result).
ASKING_STATUSES = frozenset({"waitingConfirmation", "waitingSubmission"})


def updated_part(part: ToolPart, outcome: ToolOutcome | BackgroundStarted) -> ToolPart:
    """The part with the call's outcome; an approved long-running call's part is
    `loading`, naming the background job it runs as."""
    if isinstance(outcome, BackgroundStarted):
        data = part.data.model_copy(
            update={
                "status": "loading",
                "args": outcome.args if outcome.args is not None else part.data.args,
                "bodyContent": outcome.summary,
                "backgroundJobId": outcome.job_id,
            }
        )
        return ToolPart(id=part.id, data=data)
    data = part.data.model_copy(
        update={
            "status": outcome.status,
            "result": outcome.result,
            "args": outcome.args if outcome.args is not None else part.data.args,
            "bodyContent": outcome.error,
            "mutates": outcome.mutates,
        }
    )
    return ToolPart(id=part.id, data=data)


async def rewrite_part(
    tx: Tx, record: _StoredCall, change: Callable[[ToolPart], ToolPart]
) -> tuple[ToolPart, bool, str] | None:
    """Replace the stored tool part of `record`'s call by `change(part)`, in the caller's
    unit of work (which holds the conversation's write lock); None when it is not stored.
    Also says whether no part of the message waits any more (the run may resume), and
    the message's id."""
    conversation_id = record.conversation_id
    if conversation_id is None:  # a stateless turn's call: no conversation stores it
        return None
    found = await find_part(tx.messages, record)
    if found is None:
        return None
    (message, run_id), old = found
    part = change(old)
    content = [part if isinstance(p, ToolPart) and p.id == part.id else p for p in message.parts()]
    ready = not any(isinstance(p, ToolPart) and p.data.status in WAITING_STATUSES for p in content)
    metadata = dict(message.metadata or {})
    asking = any(isinstance(p, ToolPart) and p.data.status in ASKING_STATUSES for p in content)
    if not asking and metadata.get("finish_reason") == "requires_action":
        del metadata["finish_reason"]  # nothing waits for a person any more
    jobs = awaiting(content)  # an approved long-running call: its job's result continues
    if jobs:
        metadata["background_jobs"] = jobs["background_jobs"]
        metadata.setdefault("finish_reason", jobs["finish_reason"])
    updated = message.model_copy(update={"content": content, "metadata": metadata})
    await tx.messages.upsert(record.owner_id, conversation_id, updated, run_id=run_id)
    return part, ready, message.id


class _StoredCall(CallPlace, Protocol):
    @property
    def owner_id(self) -> str: ...


async def find_part(
    messages: MessageRepo, record: _StoredCall
) -> tuple[tuple[Message, str | None], ToolPart] | None:
    """The newest current message holding the tool part of this stored call (an approval's,
    a question's)."""
    conversation_id = record.conversation_id
    if conversation_id is None:  # a stateless turn's call: no conversation stores it
        return None
    records = await messages.records(record.owner_id, conversation_id)
    for stored in reversed(records):
        if stored.message.role != "assistant":
            continue
        for p in stored.message.tool_parts():
            if p.id == record.tool_call_id:
                return (stored.message, stored.run_id), p
    return None


@dataclass(frozen=True)
class Standing:
    """Where a decided (approved, rejected) or answered call stands in its conversation:
    what a client that sends its decision or answer again is told."""

    part: ToolPart
    # Nothing of its message waits and no answer follows it yet: the run may resume.
    ready_to_resume: bool
    # The run that already continued the conversation after it, if one did.
    continued_by: str | None
    # The conversation went on with a new user message instead: no run continues the
    # call (a run of that message is not its continuation, even while it is active).
    moved_on: bool = False


async def standing(messages: MessageRepo, record: _StoredCall) -> Standing | None:
    """The stored call of a decided approval or an answered question; None when it is
    not stored."""
    conversation_id = record.conversation_id
    if conversation_id is None:  # a stateless turn's call: no conversation stores it
        return None
    stored = await messages.records(record.owner_id, conversation_id)
    for index in range(len(stored) - 1, -1, -1):
        message = stored[index].message
        if message.role != "assistant":
            continue
        part = next((p for p in message.tool_parts() if p.id == record.tool_call_id), None)
        if part is None:
            continue
        after = stored[index + 1 : index + 2]
        moved_on = bool(after) and after[0].message.role == "user"
        continued = bool(after) and after[0].message.role == "assistant"
        waiting = any(p.data.status in WAITING_STATUSES for p in message.tool_parts())
        return Standing(
            part=part,
            ready_to_resume=not waiting and not after,
            continued_by=after[0].run_id if continued else None,
            moved_on=moved_on,
        )
    return None
