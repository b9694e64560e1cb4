"""A question's card whose answer's outcome was lost: the answer committed and the tool was
called again with it, but the database failed before the card was rewritten (the client
got a 503). The card still waits on a question that is answered, so no answer reaches it
any more; the conversation would wait for ever. The next answer sent to that question (the
client's retry, or another answer) settles the card first:

    the call's newest question is ...        the card becomes                  when
    a newer one, still open                  waiting on it (the tool asked     at once: the
    (the tool asked again)                   again; nothing was lost)          call ended
    the answered one itself                  an error the model reads: the     once the tool's
                                             result was lost, the tool may     time limit (and
                                             have acted                        `LOST_AFTER`) passed
                                                                               since the answer

Before that time the answering request may still be calling the tool, and its own rewrite
is the card's; then nothing is settled here. The settled card is fed to the conversation's
tabs and audited once, under the key the answer's own rewrite would have used.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from app.domain.events import PartChange
from app.domain.parts import Elicitation, ToolPart
from app.store.database import Database
from app.store.repos.elicitations import ElicitationRecord
from app.toolruntime.outcomes import LOST_AFTER
from app.toolruntime.settled_parts import CardAudit, settle_card
from app.toolruntime.stored_parts import find_part, rewrite_part

LOST = (
    "The answer reached the tool, but its result was lost in a database outage: the tool "
    "may or may not have acted."
)


def lost_card(part: ToolPart) -> ToolPart:
    data = part.data.model_copy(
        update={
            "status": "error",
            "result": {"error": LOST},
            "bodyContent": LOST,
            "elicitation": None,
        }
    )
    return ToolPart(id=part.id, data=data)


def waiting_on(part: ToolPart, asked: Elicitation) -> ToolPart:
    """The card waiting for the answer to `asked`."""
    data = part.data.model_copy(
        update={
            "status": "waitingSubmission",
            "bodyContent": asked.message,
            "elicitation": asked,
        }
    )
    return ToolPart(id=part.id, data=data)


async def settle_lost(
    db: Database, record: ElicitationRecord, *, time_limit: float, now: datetime | None = None
) -> bool:
    """Settle the card of the answered question `record` if its answer's rewrite was lost
    (see the table); True when it did. `time_limit`: the tool's, in seconds."""
    if record.status != "answered" or record.answered_at is None:
        return False
    owner = record.owner_id
    async with db.read() as tx:  # the common case (the card was written) writes nothing
        found = await find_part(tx.messages, record)
        latest = await tx.elicitations.latest(owner, record.conversation_id, record.tool_call_id)
    if found is None or not _waits_on(found[1], record.id) or latest is None:
        return False
    if latest.id != record.id and latest.status == "pending":
        asked = Elicitation(
            id=latest.id, message=latest.message, requestedSchema=latest.requested_schema
        )
        change, outcome = (lambda p: waiting_on(p, asked)), "asked_again"
    elif (now or datetime.now(UTC)) >= _lost_at(record.answered_at, time_limit):
        change, outcome = lost_card, "lost"
    else:
        return False  # the answering request may still be calling the tool
    async with db.write() as tx:
        await tx.conversations.lock(owner, record.conversation_id)
        again = await find_part(tx.messages, record)
        if again is None or not _waits_on(again[1], record.id):
            return False  # settled meanwhile
        written = await rewrite_part(tx, record, change)
        assert written is not None  # found just now, under the conversation's lock
        part, _, message_id = written
        await settle_card(
            tx,
            record,
            PartChange(message_id, part, "input_answered"),
            key=f"elicitation:{record.id}",
            audit=CardAudit(
                owner,
                f"elicitation.{record.action}",
                "elicitation",
                record.id,
                {"outcome": outcome},
            ),
        )
    return True


def _waits_on(part: ToolPart, elicitation_id: str) -> bool:
    asked = part.data.elicitation
    return (
        part.data.status == "waitingSubmission" and asked is not None and asked.id == elicitation_id
    )


def _lost_at(answered_at: datetime, time_limit: float) -> datetime:
    """When an answered call whose card still waits has lost its result."""
    return answered_at + timedelta(seconds=time_limit) + LOST_AFTER
