"""Approvals that expire while their card waits. Nothing writes when time passes, so the
conversation's followers look (`expire_due`, at most once per poll) and the first to
notice rewrites the card as the model will read it on the next turn (an error: "The
approval for this call expired.") and adds it to the conversation's feed, once (a
unique key per approval), so every open tab shows the expired card and a reload too.
"""

from __future__ import annotations

from datetime import UTC, datetime

from app.domain.events import PartChange
from app.domain.parts import ToolPart
from app.store.database import Database
from app.store.repos.feed import PartEntry
from app.toolruntime.settled_parts import feed_entry
from app.toolruntime.stored_parts import find_part

EXPIRED = "The approval for this call expired."


def _key(approval_id: str) -> str:
    return f"approval_expired:{approval_id}"


async def expire_due(db: Database, owner_id: str, conversation_id: str) -> None:
    now = datetime.now(UTC)
    async with db.read() as tx:  # the common case writes nothing
        due = await tx.approvals.due(owner_id, conversation_id, now=now)
        announced = await tx.feed.known([_key(a.id) for a in due])
    fresh = [a for a in due if _key(a.id) not in announced]
    if not fresh:
        return
    async with db.write() as tx:
        await tx.conversations.lock(owner_id, conversation_id)
        entries: list[PartEntry] = []
        for record in fresh:
            found = await find_part(tx.messages, record)
            if found is None or found[1].data.status != "waitingConfirmation":
                continue
            (message, run_id), part = found
            data = part.data.model_copy(
                update={"status": "error", "result": {"error": EXPIRED}, "bodyContent": EXPIRED}
            )
            expired = ToolPart(id=part.id, data=data)
            content = [
                expired if isinstance(p, ToolPart) and p.id == part.id else p
                for p in message.parts()
            ]
            updated = message.model_copy(update={"content": content})
            await tx.messages.upsert(owner_id, conversation_id, updated, run_id=run_id)
            change = PartChange(message.id, expired, "approval_expired")
            entries.append(feed_entry(_key(record.id), record.run_id, change))
        await tx.feed.record_parts(conversation_id, entries)
