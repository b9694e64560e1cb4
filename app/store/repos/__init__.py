"""Repositories: every query of the service's tables, with the ownership filter built in.

One module per table group: conversations, messages, runs, events (the run event log),
audit (the audit log, written and read), approvals and proposals (the tool runtime's),
api_keys. Each repository wraps one `AsyncSession` and never commits: the caller owns the
transaction, so several repositories can write atomically together. Layers above the
store reach them through `app.store.database.Database` units of work, which keep
transactions short (one per write, never held across a stream):

    async with db.write() as tx:
        conversation = await tx.conversations.create(caller.user_id, title="Hi")
        await tx.audit(actor_id=caller.user_id, action="...", ...)

Every method that takes an `owner_id` filters by it; a missing id and another owner's id
raise the same `NotFound`, so nobody can probe for ids. Methods without `owner_id`
(`release_active_run`, `RunRepo.finish`, `EventRepo.*`) are for the run manager, which
has already checked ownership when the run started.
"""

from app.store.repos.audit import record_audit
from app.store.repos.conversations import ConversationRepo
from app.store.repos.events import EventRepo
from app.store.repos.messages import MessageRepo
from app.store.repos.runs import RunRepo

__all__ = ["ConversationRepo", "EventRepo", "MessageRepo", "RunRepo", "record_audit"]
