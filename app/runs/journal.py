"""The run journal: what the run manager keeps of runs in the database.

No unit of work is held across a stream (that would pin a pooled connection for minutes);
each method opens one, does its work in one transaction and closes it. Closing
the runs of a dead process (`recover_interrupted`) rebuilds their partial message from
the stored events.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Collection, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from app.domain.errors import Conflict, NotFound
from app.domain.events import (
    ConfirmRequired,
    MessageEnd,
    RunEnd,
    RunStatus,
    SequencedEvent,
    TextDeltaEvent,
    ToolEnd,
    ToolError,
    ToolStart,
    UsageInfo,
)
from app.domain.messages import Message
from app.domain.parts import Part, TextData, TextPart, cancel_unfinished
from app.domain.text import valid_json
from app.store.database import Database, Tx
from app.store.records import RunRecord
from app.store.repos.feed import conversation_topic, run_entry_values
from app.store.repos.message_values import append_values
from app.store.repos.messages import NotClaimed
from app.store.repos.runs import new_run_row, run_end_values
from app.store.repos.turn_statements import RunClose, RunStart
from app.store.repos.usage import UsageEntry, usage_values

# A stored replay is read in slices this long: a reader whose socket stalls holds one slice,
# not the run (a long run is tens of thousands of events).
REPLAY_BATCH = 64

log = logging.getLogger("chat_bff.runs")

# How far past the stored log the closing events of a dead process's run are numbered
# (the writer stores at least every 256 events or second, so no reader can be this far
# ahead of the stored log).
RECOVERY_GAP = 1_000_000

Prepare = Callable[[Tx], Awaitable[bool]]


class RunJournal:
    def __init__(self, db: Database, *, instance_id: str) -> None:
        self._db = db
        self.instance_id = instance_id

    async def begin(
        self,
        *,
        owner_id: str,
        conversation_id: str,
        run_id: str,
        model_id: str,
        assistant_message_id: str,
        user_message: Message | None,
        prepare: Prepare | None = None,
        options: dict[str, Any] | None = None,
        system_prompt: str | None = None,
    ) -> list[Message] | None:
        """Claim the conversation, store the user message and the run; return the history.

        One transaction, opened by the claim: a conditional UPDATE that takes the
        conversation's row lock (Postgres) or the write lock (SQLite), so a concurrent
        second send waits, then finds this run's id and gets 409. Anything failing after
        the claim rolls the whole turn back, the claim with it. `prepare` runs inside
        (tool results, edits); when it answers False its changes are kept but no run is
        created and the claim is undone: None. The claim also checks ownership (a foreign
        or missing conversation is NotFound); the caller already read the conversation,
        so its `system_prompt` comes in rather than being read again.
        """
        # Without `prepare`, the user message's UPDATE of the conversation takes the claim,
        # and on Postgres the same statement writes the run's row and feed entry.
        along = user_message if prepare is None else None
        # Announced to the conversation's followers (other tabs) once this commits, with
        # the person's message, so they show the question before the answer.
        asked = None if user_message is None else user_message.model_dump(mode="json")
        run_row = new_run_row(
            owner_id,
            conversation_id,
            run_id,
            model_id,
            assistant_message_id,
            options=options,
            instance_id=self.instance_id,
        )
        if along is not None and asked is not None and self._db.direct is not None:
            # On the driver's own connection (SQLite: one trip), unless the claim finds
            # something else; then the repositories below say what it was.
            values = append_values(
                owner_id, conversation_id, along, run_id=run_id, claim_run_id=run_id
            )
            entry = run_entry_values(run_id, asked)
            history = await self._db.direct.start(values, RunStart(run_row, entry))
            if history is not None:
                await self._db.told({conversation_topic(conversation_id)})
                return _with_system(system_prompt, history)
        async with self._db.unit() as tx:
            conversations = tx.conversations
            starting = None
            if along is not None and asked is not None:
                starting = RunStart(run_row, tx.feed.run_entry(conversation_id, run_id, asked))
            holder, started = await _claim(tx, owner_id, conversation_id, run_id, along, starting)
            if holder is not None:
                await tx.rollback()
                raise Conflict(
                    "A run is already active in this conversation.",
                    code="run_active",
                    active_run_id=holder,
                )
            messages = tx.messages
            proceed = True if prepare is None else await prepare(tx)
            if user_message is not None and along is None:
                await messages.append(owner_id, conversation_id, user_message, run_id=run_id)
            if not proceed:
                await conversations.release_active_run(conversation_id, run_id)
                await tx.commit()
                return None
            if not started:
                await tx.runs.insert(run_row)
                await tx.feed.record_run(conversation_id, run_id, asked)
            # The claim found the conversation and its owner: no need to look again.
            history = await messages.history(owner_id, conversation_id, checked=True)
            await tx.commit()
        return _with_system(system_prompt, history)

    async def latest_options(self, owner_id: str, conversation_id: str) -> dict[str, Any]:
        async with self._db.read() as tx:
            return await tx.runs.latest_options(owner_id, conversation_id)

    async def append_events(self, run_id: str, events: list[SequencedEvent]) -> None:
        if self._db.direct is not None:
            if events:
                await self._db.direct.events(run_id, events)
            return
        # One INSERT, atomic by itself: no transaction around it.
        async with self._db.standalone() as tx:
            await tx.events.append_many(run_id, events)
            await tx.commit()

    async def finish(
        self,
        *,
        owner_id: str,
        conversation_id: str,
        run_id: str,
        status: RunStatus,
        message: Message,
        usage: UsageInfo,
        error: dict[str, Any] | None,
        last_seq: int,
        events: list[SequencedEvent] | None = None,
        usage_rows: Sequence[UsageEntry] = (),
    ) -> None:
        """The run's end in one transaction: its last events, its answer (which also
        lets the conversation go), its state and its usage rows."""
        ended = run_end_values(status, usage=usage.model_dump(), error=error, last_seq=last_seq)
        answered = bool(message.parts() and (message.text() or message.tool_parts()))
        if answered and self._db.direct is not None:
            # On the driver's own connection (SQLite: one trip), unless it finds something
            # else; then the unit below does it again through the repositories.
            values = append_values(
                owner_id, conversation_id, message, run_id=run_id, release_run_id=run_id
            )
            closing = RunClose(ended, usage_values(usage_rows))
            if await self._db.direct.end(values, closing, run_id, events or []):
                return
        async with self._db.unit() as tx:
            if events:
                await tx.events.append_many(run_id, events)
            if answered:
                # Stores the answer and lets the conversation go in one UPDATE of it; the
                # run's end and usage go along (on Postgres in the same statement).
                await tx.messages.upsert(
                    owner_id,
                    conversation_id,
                    message,
                    run_id=run_id,
                    release_run_id=run_id,
                    expect_new=True,
                    closing=RunClose(ended, usage_values(usage_rows)),
                )
            else:
                await tx.usage.insert(usage_rows)
                await tx.conversations.release_active_run(conversation_id, run_id)
                await tx.runs.finish(
                    run_id, status, usage=usage.model_dump(), error=error, last_seq=last_seq
                )
            await tx.commit()

    async def close_failed(
        self,
        *,
        owner_id: str,
        conversation_id: str,
        run_id: str,
        message: Message,
        events: list[SequencedEvent],
    ) -> None:
        """Close a run whose end could not be stored: its last events (ending in a
        `failed` run_end) and its state, then the conversation's claim. The message is
        kept when the database takes it, made valid first (it may be why the end failed)."""
        last_seq = events[-1].seq
        end = events[-1].event
        error = end.error if isinstance(end, RunEnd) else None
        try:
            async with self._db.unit() as tx:
                await tx.messages.upsert(
                    owner_id, conversation_id, _valid_message(message), run_id=run_id
                )
                await tx.commit()
        except NotFound:
            raise
        except Exception:
            log.warning(
                "a failed run's message could not be stored",
                extra={"run_id": run_id},
                exc_info=True,
            )
        async with self._db.unit() as tx:
            await tx.events.append_many(run_id, events)
            await tx.runs.finish(run_id, "failed", error=error, last_seq=last_seq)
            await tx.conversations.release_active_run(conversation_id, run_id)
            await tx.commit()

    async def refuse_if_busy(self, owner_id: str, conversation_id: str) -> None:
        """409 `run_active` naming the conversation's running run, if one is; what a send
        refused before its claim (no run slot left) answers, as the claim would have."""
        async with self._db.read() as tx:
            holder = (await tx.conversations.get(owner_id, conversation_id)).active_run_id
        if holder is not None:
            raise Conflict(
                "A run is already active in this conversation.",
                code="run_active",
                active_run_id=holder,
            )

    async def get_run(
        self, owner_id: str, run_id: str, conversation_id: str | None
    ) -> RunRecord | None:
        async with self._db.read() as tx:
            try:
                return await tx.runs.get(owner_id, run_id, conversation_id)
            except NotFound:
                return None

    async def events_after(self, run_id: str, seq: int) -> list[SequencedEvent]:
        async with self._db.read() as tx:
            return await tx.events.after(run_id, seq, limit=REPLAY_BATCH)

    async def renew(self, run_ids: list[str]) -> set[str]:
        """Renew this instance's leases; returns the runs among them someone asked another
        instance to cancel (`request_cancel`)."""
        async with self._db.unit() as tx:
            await tx.runs.renew(run_ids, self.instance_id)
            asked = await tx.runs.cancel_requested(run_ids)
            await tx.commit()
        return asked

    async def request_cancel(self, owner_id: str, run_id: str) -> None:
        """Keep a cancel for the instance running the run: the bus's message to it may be
        lost, this is not (it reads it at its next lease renewal or bus reconnection)."""
        async with self._db.unit() as tx:
            await tx.runs.request_cancel(owner_id, run_id)
            await tx.commit()

    async def cancel_requested(self, run_ids: list[str]) -> set[str]:
        async with self._db.read() as tx:
            return await tx.runs.cancel_requested(run_ids)

    async def recover_interrupted(
        self, *, lease_seconds: float, held: Collection[str] = ()
    ) -> list[tuple[str, str]]:
        """Close runs a dead process left `running`; keep their partial message.

        A run is a dead process's when its lease (heartbeat) is older than `lease_seconds`:
        a live instance renews its runs' leases well within that, so starting a second
        instance on the same database never closes the first one's runs. The runs this
        instance holds (`held`) are never closed here; a run of this instance it no longer
        holds is as dead as any other. The partial message is rebuilt from the persisted
        events, marked `metadata.status: incomplete`. Returns `(owner_id, run_id)` of each
        run closed, so what they held can be freed.
        """
        stale_before = datetime.now(UTC) - timedelta(seconds=lease_seconds)
        async with self._db.read() as tx:
            stale = await tx.runs.list_unfinished(stale_before=stale_before, exclude_ids=held)
        closed: list[tuple[str, str]] = []
        for record in stale:
            try:
                await self._close_interrupted(record)
            except Exception:
                log.exception("could not close an interrupted run", extra={"run_id": record.id})
            else:
                closed.append((record.owner_id, record.id))
        return closed

    async def _close_interrupted(self, record: RunRecord) -> None:
        async with self._db.unit() as tx:
            events = tx.events
            stored = await events.after(record.id, 0)
            # The dead process may have streamed events it never stored: a reader resuming
            # from one of those must still get the closing events, so they come after a
            # gap no reader can have reached. Ids stay increasing; only this jump breaks
            # their run.
            last_seq = (stored[-1].seq if stored else 0) + RECOVERY_GAP
            message = _partial_message(record, stored)
            usage = UsageInfo()
            end = RunEnd(
                run_id=record.id,
                status="interrupted",
                usage=usage,
                error={"code": "interrupted", "message": "The service stopped during this run."},
            )
            tail = [
                SequencedEvent(
                    seq=last_seq + 1, event=MessageEnd(run_id=record.id, message=message)
                )
            ]
            tail.append(SequencedEvent(seq=last_seq + 2, event=end))
            await events.append_many(record.id, tail)
            if record.conversation_id is not None:
                if message.parts():
                    await tx.messages.upsert(
                        record.owner_id, record.conversation_id, message, run_id=record.id
                    )
                await tx.conversations.release_active_run(record.conversation_id, record.id)
            await tx.runs.finish(
                record.id,
                "interrupted",
                usage=usage.model_dump(),
                error=end.error,
                last_seq=last_seq + 2,
            )
            await tx.commit()


async def _claim(
    tx: Tx,
    owner_id: str,
    conversation_id: str,
    run_id: str,
    message: Message | None,
    starting: RunStart | None,
) -> tuple[str | None, bool]:
    """Claim the conversation for `run_id` (None) or name the run that holds it; with
    `message`, store it in the same UPDATE of the conversation (one statement fewer),
    and with it what `starting` holds. Says too whether `starting` was written."""
    if message is not None:
        try:
            await tx.messages.append(
                owner_id,
                conversation_id,
                message,
                run_id=run_id,
                claim_run_id=run_id,
                starting=starting,
            )
            return None, starting is not None
        except NotClaimed:
            pass  # held, released meanwhile, or not the owner's: the claim says which
    holder = await tx.conversations.claim_active_run(owner_id, conversation_id, run_id)
    if holder is None and message is not None:
        await tx.messages.append(owner_id, conversation_id, message, run_id=run_id)
    return holder, False


def _with_system(system_prompt: str | None, history: list[Message]) -> list[Message]:
    if not system_prompt:
        return history
    return [Message(id="system", role="system", content=system_prompt), *history]


def _valid_message(message: Message) -> Message:
    return Message.model_validate(valid_json(message.model_dump(mode="json")))


def _partial_message(record: RunRecord, events: list[SequencedEvent]) -> Message:
    message_id = record.assistant_message_id or f"msg_{record.id}"
    parts: list[Part] = []
    text = ""
    for item in events:
        event = item.event
        if isinstance(event, MessageEnd):
            parts = event.message.parts()
            text = ""
        elif isinstance(event, TextDeltaEvent):
            text += event.delta
        elif isinstance(event, ToolStart | ToolEnd | ToolError | ConfirmRequired):
            # Tool calls (and the results of those that ran) are part of the answer: a
            # model that never sees a result it already got may run the tool again.
            if text:
                parts.append(TextPart(data=TextData(text=text)))
                text = ""
            at = next((i for i, p in enumerate(parts) if p.id == event.part.id), None)
            if at is None:
                parts.append(event.part)
            else:
                parts[at] = event.part
    if text:
        parts.append(TextPart(data=TextData(text=text)))
    closed = [cancel_unfinished(part, "interrupted") for part in parts]
    return Message(
        id=message_id,
        role="assistant",
        content=closed,
        metadata={"status": "incomplete", "reason": "interrupted", "run_id": record.id},
    )
