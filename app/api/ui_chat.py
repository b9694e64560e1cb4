"""What the Vercel AI SDK routes (`app/api/routes/ui_chat.py`) need besides HTTP: the chat
id's durable conversation, the approval responses checked and decided, and the stream.

A chat id is the client's (`useChat` makes one per chat). It maps to a conversation of the
caller: a `conv_...` id is taken as the caller's own conversation (404 otherwise); any
other id maps to `conv_<digest of owner and chat id>`, created on first use. The digest
keeps ids of different users apart (two users' chat "abc" are two conversations) and needs
no lookup table.

An approval response from the client is a claim, checked like every decision: it must name
a pending approval of this user (404 otherwise), in this conversation, for the very tool
call the part names (else 404: it is not that call's approval), and the approvals service
then checks expiry, that the stored call still has the same argument digest, and decides
it exactly once (a second decision is 409 and never runs the tool again).
"""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator

from fastapi import Response, status

from app.api.encoders.vercel import HEADERS, Decided, VercelEncoder, farewell_frames
from app.api.schemas.runs import RunState
from app.api.schemas.ui_chat import ApprovalAnswer
from app.api.streaming import StreamConfig, sse_response
from app.domain.errors import Conflict, NotFound
from app.domain.events import SequencedEvent
from app.domain.identity import Caller
from app.runs.turns import Runs
from app.store.database import Database
from app.store.records import ConversationRecord
from app.store.repos.approvals import approval_not_found
from app.toolruntime.approvals import ApprovalService
from app.toolruntime.decision_replay import Decision, same_decision

OWN_PREFIX = "conv_"
RESTARTING = "This instance is restarting; the run goes on: resume the chat to follow it."


def conversation_id_for(owner_id: str, chat_id: str) -> str:
    if chat_id.startswith(OWN_PREFIX):
        return chat_id
    digest = hashlib.sha256(f"{owner_id}\0{chat_id}".encode()).hexdigest()[:32]
    return f"{OWN_PREFIX}{digest}"


async def chat_conversation(db: Database, caller: Caller, chat_id: str) -> ConversationRecord:
    """The chat's conversation, created on first use (a `conv_` id must already exist)."""
    conversation_id = conversation_id_for(caller.user_id, chat_id)
    async with db.write() as tx:
        if chat_id.startswith(OWN_PREFIX):
            return await tx.conversations.get(caller.user_id, conversation_id)
        return await tx.conversations.ensure(caller.user_id, conversation_id)


async def existing_conversation(
    db: Database, caller: Caller, chat_id: str
) -> ConversationRecord | None:
    """The chat's conversation if it exists (a resume or stop never creates one)."""
    try:
        async with db.read() as tx:
            return await tx.conversations.get(
                caller.user_id, conversation_id_for(caller.user_id, chat_id)
            )
    except NotFound:
        return None


async def decide_answers(
    approvals: ApprovalService,
    caller: Caller,
    conversation_id: str,
    answers: list[ApprovalAnswer],
    *,
    again: bool = False,
) -> list[Decided]:
    """Check every claim first (so a bad one decides nothing), then decide each once.
    `again`: the same input sent again, whose decisions may have been taken already: one
    decided as it asks is its decision, not a second one. A call decided before whose
    outcome an outage lost is closed (it may or may not have run), as any decision sent
    to `POST /api/approvals` closes it: the same decision then continues the turn, another
    is still 409 `already_decided`."""
    closed: dict[str, Decided] = {}
    for answer in answers:
        record = await approvals.get(caller, answer.approval_id)
        other_call = answer.tool_call_id not in (None, record.tool_call_id)
        if record.conversation_id != conversation_id or other_call:
            raise approval_not_found()
        decision: Decision = "approve" if answer.approved else "reject"
        if again and same_decision(None, record, decision, None, answer.reason):
            continue
        if record.status == "pending":
            continue
        lost = await approvals.settle_lost(caller, record)
        if lost is None or record.status != ("approved" if answer.approved else "rejected"):
            raise Conflict(
                "This approval was already decided.",
                code="already_decided",
                decision=record.status,
            )
        if lost.part is not None:
            closed[record.id] = Decided(lost.part, answer.approved)
    decided: list[Decided] = []
    for answer in answers:
        if answer.approval_id in closed:
            decided.append(closed[answer.approval_id])
            continue
        result = await approvals.decide(
            caller,
            answer.approval_id,
            "approve" if answer.approved else "reject",
            reason=answer.reason,
            replay=again,
        )
        if result.part is not None:
            decided.append(Decided(result.part, answer.approved))
    return decided


async def stop_chat(runs: Runs, db: Database, caller: Caller, chat_id: str) -> RunState | Response:
    """Cancel the chat's (or thread's) active run: 204 when none is active, 404 when the
    chat does not exist (a stop never creates one)."""
    conversation = await existing_conversation(db, caller, chat_id)
    if conversation is None:
        raise NotFound("Chat not found.")
    if conversation.active_run_id is None:
        return Response(status_code=status.HTTP_204_NO_CONTENT)
    run_id = conversation.active_run_id
    final = await runs.cancel(caller.user_id, run_id, conversation.id)
    return RunState(run_id=run_id, status=final)


def ui_stream(
    batches: AsyncIterator[list[SequencedEvent]], encoder: VercelEncoder, config: StreamConfig
) -> Response:
    """The run's events as a UI message stream. A disconnect leaves the run going (stop is
    its own endpoint); a shutdown ends the stream with an error the client shows."""
    response = sse_response(
        batches, encoder.encode, config, farewell=lambda: farewell_frames(RESTARTING)
    )
    response.headers.update(HEADERS)
    return response
