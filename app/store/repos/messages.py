"""Messages of a conversation: append, upsert, history, and superseding for edits.

A conversation's messages are ordered by `position`. Edit and regenerate never destroy a
message: `supersede` stamps it (and everything after it) as superseded, and the history a
model or a UI sees is the non-superseded rows in order.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Select,
    Update,
    and_,
    func,
    insert,
    literal,
    or_,
    select,
    type_coerce,
    update,
)
from sqlalchemy.ext.asyncio import AsyncSession

from app.domain.errors import Conflict, NotFound
from app.domain.messages import MESSAGE_SCHEMA_VERSION, Message
from app.store.message_codec import decode_message, encode_content
from app.store.records import MessageRecord
from app.store.repos.conversations import ConversationRepo, conversation_not_found
from app.store.repos.message_values import append_values, preview
from app.store.repos.runs import RUN_NOT_FOUND_MESSAGE, RunRepo
from app.store.repos.turn_statements import (
    HISTORY,
    INSERT_FEED_ENTRY,
    INSERT_MESSAGE,
    MESSAGES,
    USAGE,
    RunClose,
    RunStart,
    append_message,
    bump_conversation,
    together_params,
)
from app.store.tables.core import ConversationRow, MessageRow
from app.store.tables.types import utcnow


class NotClaimed(Exception):
    """An append that was to claim the conversation found it held (or not the owner's)."""


def to_record(row: MessageRow) -> MessageRecord:
    return _record_of(row, row.metadata_)


def core_record(row: Any) -> MessageRecord:
    """`to_record` for a row of the `messages` table read with Core (columns by name)."""
    return _record_of(row, row.metadata)


def _record_of(row: Any, metadata: dict[str, Any] | None) -> MessageRecord:
    payload = {"id": row.id, "role": row.role, "content": row.content, "metadata": metadata}
    return MessageRecord(
        conversation_id=row.conversation_id,
        position=row.position,
        message=decode_message(payload, row.schema_version),
        run_id=row.run_id,
        created_at=row.created_at,
        superseded_at=row.superseded_at,
        superseded_by=row.superseded_by,
    )


class MessageRepo:
    """Messages of one owner's conversations. Wraps a session; never commits."""

    def __init__(self, session: AsyncSession) -> None:
        self._session = session

    async def append(
        self,
        owner_id: str,
        conversation_id: str,
        message: Message,
        *,
        run_id: str | None = None,
        release_run_id: str | None = None,
        claim_run_id: str | None = None,
        starting: RunStart | None = None,
        closing: RunClose | None = None,
    ) -> MessageRecord:
        """Add `message` after the last one; keeps count, preview, title and updated_at.

        The conversation row is updated first: that takes its write lock, so two appends
        to one conversation queue up instead of racing for the same position (and for
        the same message id). `release_run_id` also clears the conversation's active run
        when it is still that run, in the same UPDATE (a run's end stores its answer);
        `claim_run_id` makes that run the active one if there is none, in the same UPDATE
        (a run's start stores the user message), and raises `NotClaimed`, with nothing
        written, when another run holds the conversation or it is not the owner's.
        `starting` (with a claim) writes the claiming run's row and feed entry too: in the
        same statement on Postgres (`append_message`), right after on SQLite.
        `closing` (with `release_run_id`, the run whose answer this is) writes that run's
        end and usage rows, likewise, also when the id turns out taken (`Conflict`).
        """
        values = append_values(
            owner_id,
            conversation_id,
            message,
            run_id=run_id,
            release_run_id=release_run_id,
            claim_run_id=claim_run_id,
        )
        options, params, row = values.options, values.params, values.row
        now = row["created_at"]
        # The UPDATE numbers the message (its row lock queues other appends) and says
        # whether its id is taken; on Postgres the INSERT goes in the same statement.
        together = self._session.get_bind().dialect.name == "postgresql"
        bump: Select[Any] | Update
        if together:
            bump = append_message(
                **options, start_run=starting is not None, close_run=closing is not None
            )
            params = together_params(values, starting, closing)
        else:
            bump = bump_conversation(**options)
        touched = (await self._session.execute(bump, params)).first()
        if touched is None:
            raise NotClaimed() if claim_run_id is not None else conversation_not_found()
        after, counted, *entered = touched
        if closing is not None:
            assert release_run_id is not None
            await self._close(closing, release_run_id, entered)
        if counted == (0 if together else 1):  # inserted none / the id is there already
            raise Conflict(
                "This conversation already has a message with that id.",
                code="message_id_taken",
            )
        if not together:
            await self._session.execute(INSERT_MESSAGE, row | {"position": after - 1})
        if starting is not None:
            await self._start(starting, entered, {"p_cid": conversation_id, "p_now": now})
        return MessageRecord(
            conversation_id=conversation_id,
            position=after - 1,
            message=message,
            run_id=run_id,
            created_at=now,
            superseded_at=None,
            superseded_by=None,
        )

    async def _start(self, starting: RunStart, entered: list[int], at: dict[str, Any]) -> None:
        """What `append_message` wrote along on Postgres (`entered`: whether the feed entry
        went in), or both statements on SQLite."""
        if not entered:
            await RunRepo(self._session).insert(starting.row)
        if not entered or not entered[0]:
            await self._session.execute(INSERT_FEED_ENTRY, starting.feed | at)

    async def _close(self, closing: RunClose, run_id: str, ended: list[int]) -> None:
        """What `append_message` wrote along on Postgres (`ended`: how many runs it
        updated), or the run's UPDATE and the usage INSERT on SQLite."""
        if ended:
            if ended[0] == 0:
                raise NotFound(RUN_NOT_FOUND_MESSAGE)
            return
        await RunRepo(self._session).end(run_id, closing.run)
        if closing.usage:
            await self._session.execute(insert(USAGE), closing.usage)

    async def upsert(
        self,
        owner_id: str,
        conversation_id: str,
        message: Message,
        *,
        run_id: str | None = None,
        release_run_id: str | None = None,
        expect_new: bool = False,
        closing: RunClose | None = None,
    ) -> MessageRecord:
        """Insert `message`, or replace the content and metadata of the one with its id
        (the run manager writes the assistant message this way, at run end and on cancel).
        `release_run_id` also clears the conversation's active run when it is still that
        run (in the conversation's UPDATE when the message is new).

        `expect_new` (a run's answer at its end): append straight away, which finds out
        itself whether the id is taken (one lookup fewer); if it is, the append's count is
        taken back and the stored message replaced as usual. `closing` (with `expect_new`)
        goes to that append, which writes it whatever it finds.
        """
        refresh = False
        if expect_new:
            try:
                return await self.append(
                    owner_id,
                    conversation_id,
                    message,
                    run_id=run_id,
                    release_run_id=release_run_id,
                    closing=closing,
                )
            except Conflict as exc:
                if exc.code != "message_id_taken":
                    raise
            # Nothing was appended: the position goes back too (the row is still locked
            # by this transaction, so no other append took the next one).
            await self._session.execute(
                update(ConversationRow)
                .where(ConversationRow.id == conversation_id)
                .values(
                    message_count=ConversationRow.message_count - 1,
                    next_position=ConversationRow.next_position - 1,
                )
                .execution_options(synchronize_session=False)
            )
            refresh = True  # the append's UPDATE set this message's preview
        row = await self._session.scalar(
            select(MessageRow).where(
                MessageRow.conversation_id == conversation_id,
                MessageRow.id == message.id,
                MessageRow.owner_id == owner_id,
            )
        )
        if row is None:
            return await self.append(
                owner_id, conversation_id, message, run_id=run_id, release_run_id=release_run_id
            )
        row.role = message.role
        row.content = encode_content(message)
        row.metadata_ = message.metadata
        row.schema_version = MESSAGE_SCHEMA_VERSION
        if run_id is not None:
            row.run_id = run_id
        await self._session.flush()
        if row.superseded_at is None or refresh:
            await self._refresh_preview(conversation_id)
        if release_run_id is not None:
            await ConversationRepo(self._session).release_active_run(
                conversation_id, release_run_id
            )
        return to_record(row)

    async def records(
        self,
        owner_id: str,
        conversation_id: str,
        *,
        include_superseded: bool = False,
        checked: bool = False,
    ) -> list[MessageRecord]:
        """Stored versions in order; superseded ones only when asked for. `checked`: the
        caller already found the conversation is the owner's (no round trip to say so)."""
        if not checked:
            await self._check_conversation(owner_id, conversation_id)
        if not include_superseded:
            # The turn's history: a prebuilt Core statement, rows read as tuples.
            rows = await self._session.execute(
                HISTORY, {"p_cid": conversation_id, "p_owner": owner_id}
            )
            return [core_record(r) for r in rows]
        query = select(MessageRow).where(
            MessageRow.conversation_id == conversation_id, MessageRow.owner_id == owner_id
        )
        stored = (await self._session.execute(query.order_by(MessageRow.position))).scalars()
        return [to_record(r) for r in stored]

    async def history(
        self, owner_id: str, conversation_id: str, *, checked: bool = False
    ) -> list[Message]:
        """The conversation as a model or a UI should see it: current versions, in order."""
        records = await self.records(owner_id, conversation_id, checked=checked)
        return [r.message for r in records]

    async def check(self, owner_id: str, conversation_id: str) -> None:
        """NotFound unless the conversation is the owner's."""
        await self._check_conversation(owner_id, conversation_id)

    async def current_of(
        self, owner_id: str, conversation_id: str, ids: Collection[str]
    ) -> list[MessageRecord]:
        """The current versions among the messages `ids`, in order (by primary key)."""
        rows = await self._session.execute(
            select(MESSAGES)
            .where(
                MESSAGES.c.conversation_id == conversation_id,
                MESSAGES.c.owner_id == owner_id,
                MESSAGES.c.id.in_(list(ids)),
                MESSAGES.c.superseded_at.is_(None),
            )
            .order_by(MESSAGES.c.position)
        )
        return [core_record(r) for r in rows]

    async def holding(
        self, owner_id: str, conversation_id: str, ids: Collection[str]
    ) -> list[MessageRecord]:
        """The current messages with a part whose id or approval id is one of `ids`, in
        order. A superset: an `id` or `approvalId` anywhere in a message's parts counts.
        The database looks inside the conversation's messages; only those found are read."""
        wanted = list(ids)
        content = MESSAGES.c.content
        held: ColumnElement[bool]
        if self._session.get_bind().dialect.name == "postgresql":
            from sqlalchemy.dialects.postgresql import JSONB

            as_jsonb = type_coerce(content, JSONB)
            held = or_(
                *(as_jsonb.contains([{"id": i}]) for i in wanted),
                *(as_jsonb.contains([{"data": {"approvalId": i}}]) for i in wanted),
            )
        else:
            tree = func.json_tree(content).table_valued("key", "atom")
            held = (
                select(literal(1))
                .select_from(tree)
                .where(tree.c.key.in_(("id", "approvalId")), tree.c.atom.in_(wanted))
                .exists()
            )
        rows = await self._session.execute(
            select(MESSAGES)
            .where(
                MESSAGES.c.conversation_id == conversation_id,
                MESSAGES.c.owner_id == owner_id,
                MESSAGES.c.superseded_at.is_(None),
                held,
            )
            .order_by(MESSAGES.c.position)
        )
        return [core_record(r) for r in rows]

    async def window(
        self,
        owner_id: str,
        conversation_id: str,
        *,
        beyond: int | None,
        descending: bool,
        limit: int,
    ) -> list[MessageRecord]:
        """Up to `limit` current versions past the position `beyond` (none: from the
        start), oldest first or newest first: a keyset read on (conversation, position)."""
        query = select(MESSAGES).where(
            MESSAGES.c.conversation_id == conversation_id,
            MESSAGES.c.owner_id == owner_id,
            MESSAGES.c.superseded_at.is_(None),
        )
        position = MESSAGES.c.position
        if beyond is not None:
            query = query.where(position < beyond if descending else position > beyond)
        ordered = query.order_by(position.desc() if descending else position).limit(limit)
        return [core_record(r) for r in await self._session.execute(ordered)]

    async def supersede(
        self,
        owner_id: str,
        conversation_id: str,
        from_message_id: str,
        *,
        superseded_by: str | None = None,
    ) -> list[Message]:
        """Mark `from_message_id` and every later current message superseded; returns them
        in order. `superseded_by` names the replacement when it is already known."""
        await self._check_conversation(owner_id, conversation_id)
        start = await self._session.scalar(
            select(MessageRow.position).where(
                MessageRow.conversation_id == conversation_id,
                MessageRow.owner_id == owner_id,
                MessageRow.id == from_message_id,
                MessageRow.superseded_at.is_(None),
            )
        )
        if start is None:
            raise NotFound("Message not found.")
        now = utcnow()
        later = and_(
            MessageRow.conversation_id == conversation_id,
            MessageRow.position >= start,
            MessageRow.superseded_at.is_(None),
        )
        query = select(MessageRow).where(later).order_by(MessageRow.position)
        rows = (await self._session.execute(query)).scalars().all()
        for row in rows:
            row.superseded_at = now
            row.superseded_by = superseded_by
        await self._session.flush()
        await self._session.execute(
            update(ConversationRow)
            .where(ConversationRow.id == conversation_id)
            .values(message_count=ConversationRow.message_count - len(rows), updated_at=now)
            .execution_options(synchronize_session=False)
        )
        await self._refresh_preview(conversation_id)
        return [to_record(r).message for r in rows]

    async def _check_conversation(self, owner_id: str, conversation_id: str) -> None:
        found = await self._session.scalar(
            select(ConversationRow.id).where(
                ConversationRow.id == conversation_id, ConversationRow.owner_id == owner_id
            )
        )
        if found is None:
            raise conversation_not_found()

    async def _refresh_preview(self, conversation_id: str) -> None:
        """The preview is the text of the latest current message that has text."""
        rows = await self._session.execute(
            select(MessageRow)
            .where(
                MessageRow.conversation_id == conversation_id,
                MessageRow.superseded_at.is_(None),
            )
            .order_by(MessageRow.position.desc())
            .limit(20)
        )
        text_preview = None
        for row in rows.scalars():
            text_preview = preview(to_record(row).message)
            if text_preview is not None:
                break
        await self._session.execute(
            update(ConversationRow)
            .where(ConversationRow.id == conversation_id)
            .values(last_message_preview=text_preview, updated_at=utcnow())
            .execution_options(synchronize_session=False)
        )
