"""Repositories: every query of the core tables, with the ownership filter built in.

Each repository wraps one `AsyncSession` and never commits: the caller owns the
transaction, so several repositories can write atomically together. Keep transactions
short (open one per write, never hold one across a stream):

    async with services.sessions.begin() as session:
        conversation = await ConversationRepo(session).create(caller.user_id, title="Hi")
        await record_audit(session, actor_id=caller.user_id, action="...", ...)

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
