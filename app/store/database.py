"""The one handle on the database that the layers above the store hold.

Runs, routes, the tool runtime and the identity checks never see SQLAlchemy: they open a
short unit of work and call repositories on it.

    async with db.write() as tx:              # one transaction, committed at the end
        record = await tx.conversations.create(owner_id, title="Hi")
        await tx.audit(actor_id=owner_id, action="conversation.create", ...)

    async with db.read() as tx:               # a session that writes nothing
        page = await tx.conversations.list(owner_id, limit=20)

Keep units short: open one per write, never hold one across a stream (it would pin a
pooled connection for minutes). A unit that must decide mid-way (the run claim) calls
`tx.commit()` / `tx.rollback()` itself.

A unit whose connection the database ended, or could not open, raises `Unavailable`
(`database_unavailable`, see app.store.lost_connection): the caller answers 503, retry.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Collection
from contextlib import asynccontextmanager
from functools import cached_property
from typing import TYPE_CHECKING, Any

from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from app.store.db import answers, session_factory
from app.store.idempotency import IdempotencyRepo
from app.store.lost_connection import reported_unavailable
from app.store.repos.api_keys import ApiKeyRepo
from app.store.repos.approvals import ApprovalRepo
from app.store.repos.audit import AuditPage, list_audit, record_audit
from app.store.repos.conversations import ConversationRepo
from app.store.repos.elicitations import ElicitationRepo
from app.store.repos.events import EventRepo
from app.store.repos.feed import FeedRepo
from app.store.repos.files import FileRepo
from app.store.repos.jobs import JobRepo
from app.store.repos.messages import MessageRepo
from app.store.repos.proposals import ProposalRepo
from app.store.repos.queue import QueueRepo
from app.store.repos.runs import RunRepo
from app.store.repos.usage import UsageRepo
from app.store.sqlite_driver import OneTripDbapi
from app.store.sqlite_turns import SqliteTurns

if TYPE_CHECKING:
    from app.store.pg_turns import PostgresTurns

log = logging.getLogger("chat_bff.store")

# Told the topics a unit touched, once it committed (the live bus, wired by the container).
Announce = Callable[[Collection[str]], Awaitable[None]]


class Tx:
    """A unit of work: the repositories of one session, created on first use."""

    def __init__(self, session: AsyncSession, announce: Announce | None = None) -> None:
        self.session = session  # for repositories of tool modules that keep their own tables
        # Topics whose readers should look again once this unit commits (`FeedRepo`).
        self.touched: set[str] = set()
        self._announce = announce

    @cached_property
    def conversations(self) -> ConversationRepo:
        return ConversationRepo(self.session)

    @cached_property
    def messages(self) -> MessageRepo:
        return MessageRepo(self.session)

    @cached_property
    def runs(self) -> RunRepo:
        return RunRepo(self.session)

    @cached_property
    def events(self) -> EventRepo:
        return EventRepo(self.session)

    @cached_property
    def api_keys(self) -> ApiKeyRepo:
        return ApiKeyRepo(self.session)

    @cached_property
    def approvals(self) -> ApprovalRepo:
        return ApprovalRepo(self.session)

    @cached_property
    def elicitations(self) -> ElicitationRepo:
        return ElicitationRepo(self.session)

    @cached_property
    def proposals(self) -> ProposalRepo:
        return ProposalRepo(self.session)

    @cached_property
    def queue(self) -> QueueRepo:
        return QueueRepo(self.session)

    @cached_property
    def feed(self) -> FeedRepo:
        return FeedRepo(self.session, self.touched)

    @cached_property
    def files(self) -> FileRepo:
        return FileRepo(self.session)

    @cached_property
    def idempotency(self) -> IdempotencyRepo:
        return IdempotencyRepo(self.session)

    @cached_property
    def usage(self) -> UsageRepo:
        return UsageRepo(self.session)

    @cached_property
    def jobs(self) -> JobRepo:
        return JobRepo(self.session)

    async def audit_page(
        self,
        *,
        limit: int = 50,
        cursor: str | None = None,
        actor_id: str | None = None,
        action: str | None = None,
        target_type: str | None = None,
        target_id: str | None = None,
    ) -> AuditPage:
        """A page of the audit log, newest first (see `list_audit`)."""
        return await list_audit(
            self.session,
            limit=limit,
            cursor=cursor,
            actor_id=actor_id,
            action=action,
            target_type=target_type,
            target_id=target_id,
        )

    async def audit(
        self,
        *,
        actor_id: str,
        action: str,
        target_type: str,
        target_id: str,
        details: dict[str, Any] | None = None,
    ) -> str:
        """Write an audit record in this unit (see `record_audit`); returns its id."""
        return await record_audit(
            self.session,
            actor_id=actor_id,
            action=action,
            target_type=target_type,
            target_id=target_id,
            details=details,
        )

    async def commit(self) -> None:
        await self.session.commit()
        await self.announce()

    async def rollback(self) -> None:
        await self.session.rollback()
        self.touched.clear()

    async def announce(self) -> None:
        """Tell the live bus what this unit committed (`announce`)."""
        topics, self.touched = set(self.touched), set()
        await announce(self._announce, topics)


async def announce(to: Announce | None, topics: set[str]) -> None:
    """Tell the live bus what a unit committed; the durable rows already say it, so a
    failure here only delays readers until they look again."""
    if not topics or to is None:
        return
    try:
        await to(topics)
    except Exception as exc:  # noqa: BLE001
        log.warning(
            "could not announce committed changes",
            extra={"topics": sorted(topics), "error_type": type(exc).__name__},
        )


class Database:
    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine
        self.sessions: async_sessionmaker[AsyncSession] = session_factory(engine)
        self.announce: Announce | None = None
        # Sessions whose statements each commit on their own (Postgres; the asyncpg
        # adapter then sends no BEGIN and no COMMIT). SQLite's driver starts a transaction
        # only before a write, so there a plain session is already as cheap.
        self._standalone = self.sessions
        # A turn's database work on the driver's own connection (None: the repositories).
        self.direct: SqliteTurns | PostgresTurns | None = None
        if isinstance(engine.dialect.loaded_dbapi, OneTripDbapi):
            self.direct = SqliteTurns(engine)
        elif engine.dialect.driver == "asyncpg":
            # Imported here: asyncpg held ~2.6 MB of an SQLite deployment's idle RSS.
            from app.store.pg_turns import PostgresTurns

            self.direct = PostgresTurns(engine)
        if engine.dialect.name == "postgresql":
            self._standalone = session_factory(
                engine.execution_options(isolation_level="AUTOCOMMIT")
            )

    @asynccontextmanager
    async def read(self) -> AsyncIterator[Tx]:
        """A session for reads; anything not committed explicitly is rolled back."""
        with reported_unavailable():
            async with self.sessions() as session:
                yield Tx(session)

    @asynccontextmanager
    async def unit(self) -> AsyncIterator[Tx]:
        """A unit that decides itself: nothing is kept unless it calls `tx.commit()`."""
        with reported_unavailable():
            async with self.sessions() as session:
                yield Tx(session, self.announce)

    @asynccontextmanager
    async def standalone(self) -> AsyncIterator[Tx]:
        """A unit whose statements each stand alone: one atomic write (an event batch's
        INSERT) or reads that need no common snapshot. Two round trips fewer on Postgres
        (no BEGIN, no COMMIT or ROLLBACK). Call `tx.commit()` after a write all the same:
        it announces what was written, and on SQLite it commits."""
        with reported_unavailable():
            async with self._standalone() as session:
                yield Tx(session, self.announce)

    @asynccontextmanager
    async def write(self) -> AsyncIterator[Tx]:
        """One transaction: committed when the block ends, rolled back when it raises."""
        with reported_unavailable():
            async with self.sessions.begin() as session:
                tx = Tx(session, self.announce)
                yield tx
        await tx.announce()

    async def told(self, topics: set[str]) -> None:
        """Announce what a unit committed outside a `Tx` (`SqliteTurns`, `PostgresTurns`)."""
        await announce(self.announce, topics)

    async def answers(self) -> bool:
        """Whether one round trip succeeds (readiness)."""
        return await answers(self.engine)

    async def dispose(self) -> None:
        await self.engine.dispose()
