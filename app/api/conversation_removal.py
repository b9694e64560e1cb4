"""Archiving or purging a conversation: what `DELETE /api/conversations/{id}` does, and
what `DELETE /v1/conversations/{id}` does as a purge (OpenAI's delete is for good)."""

from __future__ import annotations

from app.domain.identity import Caller
from app.files.service import Files
from app.runs.turns import Runs
from app.store.database import Database


async def remove_conversation(
    conversation_id: str, runs: Runs, db: Database, files: Files, caller: Caller, *, purge: bool
) -> None:
    """Archive it (kept, hidden from the list), or with `purge` stop its run and delete
    its messages, runs, events and files for good; audited either way."""
    if purge:
        await runs.stop_active(caller, conversation_id)
    blobs: list[str] = []
    async with db.write() as tx:
        repo = tx.conversations
        if purge:
            blobs = await tx.files.delete_for_conversation(caller.user_id, conversation_id)
            await repo.purge(caller.user_id, conversation_id)
        else:
            await repo.archive(caller.user_id, conversation_id)
        await tx.audit(
            actor_id=caller.user_id,
            action="conversation.purge" if purge else "conversation.archive",
            target_type="conversation",
            target_id=conversation_id,
        )
    if purge:
        await runs.forget(conversation_id)
        await files.drop_blobs(blobs)  # after the commit: a rollback keeps them
