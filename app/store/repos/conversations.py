"""Conversations: create, read, list with a keyset cursor, update, archive, purge, and the
one-active-run-per-conversation claim."""

from __future__ import annotations

import base64
import binascii
import json
from datetime import datetime
from typing import Any, cast

from sqlalchemy import Row, delete, select, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql.elements import ColumnElement

from app.domain.errors import InvalidRequest, NotFound
from app.domain.tooling import ConversationMode
from app.store.dialect_insert import conflict_insert
from app.store.records import (
    ArchivedFilter,
    ConversationKind,
    ConversationPage,
    ConversationRecord,
)
from app.store.repos.keyset import cursor_id, cursor_instant
from app.store.repos.rowcount import rowcount
from app.store.repos.turn_statements import CONVERSATION
from app.store.tables.core import ConversationRow, MessageRow, RunEventRow, RunRow
from app.store.tables.idempotency import IdempotencyKeyRow
from app.store.tables.types import new_id, utcnow

NOT_FOUND_MESSAGE = "Conversation not found."


def conversation_not_found() -> NotFound:
    return NotFound(NOT_FOUND_MESSAGE)


def to_record(row: ConversationRow | Row[Any]) -> ConversationRecord:
    """The record of a row, read through the ORM or as a Core row of the table."""
    metadata = row.metadata_ if isinstance(row, ConversationRow) else row.metadata
    return ConversationRecord(
        id=row.id,
        owner_id=row.owner_id,
        title=row.title,
        title_set_by_user=row.title_set_by_user,
        model=row.model,
        system_prompt=row.system_prompt,
        mode=cast(ConversationMode, row.mode),
        scope=dict(row.scope or {}),
        metadata=dict(metadata or {}),
        archived_at=row.archived_at,
        created_at=row.created_at,
        updated_at=row.updated_at,
        message_count=row.message_count,
        last_message_preview=row.last_message_preview,
        active_run_id=row.active_run_id,
        kind=cast(ConversationKind, row.kind),
    )


def encode_cursor(updated_at: datetime, conversation_id: str) -> str:
    raw = json.dumps([updated_at.isoformat(), conversation_id]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[datetime, str]:
    """The (updated_at, id) a cursor points after; a tampered cursor is a 400."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        stamp, conversation_id = json.loads(raw)
        return cursor_instant(stamp), cursor_id(conversation_id)
    except (ValueError, TypeError, binascii.Error, UnicodeDecodeError) as exc:
        raise InvalidRequest("The cursor is not valid.", code="invalid_cursor") from exc


class ConversationRepo:
    """Conversations of one owner at a time. Wraps a session; never commits."""

    def __init__(self, session: AsyncSession) -> None:
        self._session = session

    async def create(
        self,
        owner_id: str,
        *,
        title: str | None = None,
        model: str | None = None,
        system_prompt: str | None = None,
        mode: ConversationMode = "auto",
        scope: dict[str, Any] | None = None,
        metadata: dict[str, Any] | None = None,
        kind: ConversationKind = "chat",
    ) -> ConversationRecord:
        """`kind="background_response"`: a conversation no list shows (`list`)."""
        now = utcnow()
        row = ConversationRow(
            id=new_id("conv"),
            owner_id=owner_id,
            title=title,
            title_set_by_user=title is not None,
            model=model,
            system_prompt=system_prompt,
            mode=mode,
            scope=scope or {},
            metadata_=metadata or {},
            archived_at=None,
            created_at=now,
            updated_at=now,
            message_count=0,
            next_position=0,
            last_message_preview=None,
            active_run_id=None,
            kind=kind,
        )
        self._session.add(row)
        await self._session.flush()
        return to_record(row)

    async def ensure(self, owner_id: str, conversation_id: str) -> ConversationRecord:
        """The owner's conversation with this id, created empty on first use (a client
        that names its chats, like the Vercel AI SDK's `useChat`, gets a durable one).

        An insert that does nothing when the id exists, so two first sends racing make one
        row; an id held by another owner is `NotFound` like any foreign id.
        """
        now = utcnow()
        row = ConversationRow
        values = {
            row.id: conversation_id,
            row.owner_id: owner_id,
            row.title_set_by_user: False,
            row.mode: "auto",
            row.scope: {},
            row.metadata_: {},
            row.created_at: now,
            row.updated_at: now,
            row.message_count: 0,
            row.next_position: 0,
        }
        await self._session.execute(
            conflict_insert(self._session, row)
            .values(values)
            .on_conflict_do_nothing(index_elements=["id"])
        )
        return await self.get(owner_id, conversation_id)

    async def _row(
        self, owner_id: str, conversation_id: str, *, include_archived: bool = True
    ) -> ConversationRow:
        query = select(ConversationRow).where(
            ConversationRow.id == conversation_id, ConversationRow.owner_id == owner_id
        )
        if not include_archived:
            query = query.where(ConversationRow.archived_at.is_(None))
        row = (await self._session.execute(query)).scalar_one_or_none()
        if row is None:
            raise conversation_not_found()
        return row

    async def get(
        self, owner_id: str, conversation_id: str, *, include_archived: bool = True
    ) -> ConversationRecord:
        if not include_archived:
            return to_record(await self._row(owner_id, conversation_id, include_archived=False))
        # Every turn starts here: a prebuilt Core statement, the row read as a tuple.
        found = await self._session.execute(
            CONVERSATION, {"p_cid": conversation_id, "p_owner": owner_id}
        )
        row = found.one_or_none()
        if row is None:
            raise conversation_not_found()
        return to_record(row)

    async def list(
        self,
        owner_id: str,
        *,
        limit: int = 20,
        cursor: str | None = None,
        archived: ArchivedFilter = "false",
        q: str | None = None,
    ) -> ConversationPage:
        """Newest first by (updated_at, id); `q` matches the title, case-insensitively.
        Only chats: a conversation holding a background response is not listed (until
        its owner continues it: `adopt`)."""
        query = select(ConversationRow).where(
            ConversationRow.owner_id == owner_id, ConversationRow.kind == "chat"
        )
        if archived == "false":
            query = query.where(ConversationRow.archived_at.is_(None))
        elif archived == "true":
            query = query.where(ConversationRow.archived_at.is_not(None))
        if q:
            query = query.where(ConversationRow.title.icontains(q, autoescape=True))
        if cursor:
            at, after_id = decode_cursor(cursor)
            before: ColumnElement[bool] = (ConversationRow.updated_at < at) | (
                (ConversationRow.updated_at == at) & (ConversationRow.id < after_id)
            )
            query = query.where(before)
        query = query.order_by(ConversationRow.updated_at.desc(), ConversationRow.id.desc())
        rows = (await self._session.execute(query.limit(limit + 1))).scalars().all()
        items = [to_record(r) for r in rows[:limit]]
        next_cursor = None
        if len(rows) > limit:
            last = items[-1]
            next_cursor = encode_cursor(last.updated_at, last.id)
        return ConversationPage(items=items, next_cursor=next_cursor)

    async def update(
        self,
        owner_id: str,
        conversation_id: str,
        *,
        title: str | None = None,
        metadata: dict[str, Any] | None = None,
        archived: bool | None = None,
        mode: ConversationMode | None = None,
    ) -> ConversationRecord:
        """Change what is given (None leaves a field alone); a title given here is the
        user's and is never replaced by the automatic one."""
        row = await self._row(owner_id, conversation_id)
        now = utcnow()
        before = to_record(row)
        if title is not None:
            row.title = title
            row.title_set_by_user = True
        if metadata is not None:
            row.metadata_ = dict(metadata)
        if mode is not None:
            row.mode = mode
        if archived is not None and archived != before.archived:
            row.archived_at = now if archived else None
        if to_record(row) != before:
            row.updated_at = now
            await self._session.flush()
        return to_record(row)

    async def adopt(self, conversation_id: str) -> None:
        """A conversation made to hold a background response becomes a chat, listed like
        any other: its owner sent it a turn of their own (the turn's claim, in the same
        transaction, checked the owner)."""
        await self._session.execute(
            update(ConversationRow)
            .where(ConversationRow.id == conversation_id, ConversationRow.kind != "chat")
            .values(kind="chat")
        )

    async def archive(self, owner_id: str, conversation_id: str) -> ConversationRecord:
        return await self.update(owner_id, conversation_id, archived=True)

    async def purge(self, owner_id: str, conversation_id: str) -> None:
        """Delete the conversation with its messages, runs and run events, for good, and
        the Idempotency-Key outcomes about it (a keyed retry must not answer them)."""
        await self._row(owner_id, conversation_id)
        kept = IdempotencyKeyRow
        await self._session.execute(
            delete(kept).where(kept.owner_id == owner_id, kept.conversation_id == conversation_id)
        )
        run_ids = select(RunRow.id).where(RunRow.conversation_id == conversation_id)
        await self._session.execute(delete(RunEventRow).where(RunEventRow.run_id.in_(run_ids)))
        await self._session.execute(delete(RunRow).where(RunRow.conversation_id == conversation_id))
        await self._session.execute(
            delete(MessageRow).where(MessageRow.conversation_id == conversation_id)
        )
        # Tables of other modules that point here cascade in the database.
        await self._session.execute(
            delete(ConversationRow).where(
                ConversationRow.id == conversation_id, ConversationRow.owner_id == owner_id
            )
        )
        self._session.expunge_all()

    async def lock(self, owner_id: str, conversation_id: str) -> bool:
        """Serialise writers of one conversation's tool state until the transaction ends;
        False when the caller has no such conversation.

        Postgres: a row lock (`FOR UPDATE`). SQLite has one writer at a time already, as
        long as the transaction has written before it reads what it will base a write on.
        """
        found = await self._session.scalar(
            select(ConversationRow.id)
            .where(ConversationRow.id == conversation_id, ConversationRow.owner_id == owner_id)
            .with_for_update()
        )
        return found is not None

    async def claim_active_run(
        self, owner_id: str, conversation_id: str, run_id: str
    ) -> str | None:
        """Make `run_id` the conversation's active run if it has none.

        Returns None when the claim succeeded (or `run_id` already holds it), otherwise
        the id of the run that holds it. A conditional UPDATE decides, so two concurrent
        claims cannot both win on Postgres (row lock, re-checked WHERE) or SQLite (one
        writer at a time). Commit the claim in its own short transaction.
        """
        for _ in range(3):
            claimed = await self._session.execute(
                update(ConversationRow)
                .where(
                    ConversationRow.id == conversation_id,
                    ConversationRow.owner_id == owner_id,
                    ConversationRow.active_run_id.is_(None),
                )
                .values(active_run_id=run_id)
                .execution_options(synchronize_session=False)
            )
            if rowcount(claimed) == 1:
                return None
            holder = (
                await self._session.execute(
                    select(ConversationRow.active_run_id).where(
                        ConversationRow.id == conversation_id,
                        ConversationRow.owner_id == owner_id,
                    )
                )
            ).one_or_none()
            if holder is None:
                raise conversation_not_found()
            if holder[0] is not None:
                return None if holder[0] == run_id else str(holder[0])
            # Released between our UPDATE and SELECT: try again.
        raise RuntimeError("could not claim the conversation's active run")

    async def release_active_run(self, conversation_id: str, run_id: str) -> bool:
        """Clear the active run if it is still `run_id`; True when something changed."""
        result = await self._session.execute(
            update(ConversationRow)
            .where(
                ConversationRow.id == conversation_id,
                ConversationRow.active_run_id == run_id,
            )
            .values(active_run_id=None)
            .execution_options(synchronize_session=False)
        )
        return rowcount(result) == 1
