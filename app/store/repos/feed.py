"""The conversation feed (see `app.store.tables.feed`): written in the transaction of the
change itself (a run's claim with the message it answers, a decision, a settled proposal
batch), read by the
conversation's follow stream after a position.

Every write names the conversation's topic in `touched`; `Database` announces the topics
of a unit once it commits, so a follower wakes without polling.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from app.store.repos.turn_statements import INSERT_FEED_ENTRY
from app.store.tables.feed import FeedRow
from app.store.tables.types import utcnow

FeedKind = Literal["run", "part"]


def conversation_topic(conversation_id: str) -> str:
    """The bus topic on which a conversation's committed feed entries are announced."""
    return f"conversation:{conversation_id}"


def run_entry_values(run_id: str, message: dict[str, Any]) -> dict[str, Any]:
    """A run's feed entry (it answers `message`) as parameters of `INSERT_FEED_ENTRY`
    besides p_cid and p_now."""
    return {"p_kind": "run", "p_item": run_id, "p_run": run_id, "p_data": {"message": message}}


@dataclass(frozen=True, slots=True)
class FeedEntry:
    seq: int
    kind: str
    run_id: str | None
    data: dict[str, Any]


@dataclass(frozen=True, slots=True)
class PartEntry:
    """A tool part changed outside its run; `key` makes a change noticed twice one entry."""

    key: str
    run_id: str | None
    message_id: str
    part: dict[str, Any]
    cause: str


class FeedRepo:
    def __init__(self, session: AsyncSession, touched: set[str]) -> None:
        self._session = session
        self._touched = touched

    async def record_run(
        self, conversation_id: str, run_id: str, message: dict[str, Any] | None = None
    ) -> None:
        """A run started; `message` is the person's message it answers, as stored (other
        tabs show it before the run's events), None when no one wrote one (a decision)."""
        await self._add(
            conversation_id, "run", run_id, run_id, {"message": message} if message else {}
        )

    def run_entry(
        self, conversation_id: str, run_id: str, message: dict[str, Any]
    ) -> dict[str, Any]:
        """`record_run`'s entry as parameters of `INSERT_FEED_ENTRY` (besides p_cid and
        p_now), for a claim that writes it along (`MessageRepo.append`); the unit announces
        the conversation's topic once it commits."""
        self._touched.add(conversation_topic(conversation_id))
        return run_entry_values(run_id, message)

    async def known(self, keys: Sequence[str]) -> set[str]:
        """Which of these part changes are already in a feed."""
        if not keys:
            return set()
        return set(
            await self._session.scalars(
                select(FeedRow.item_id).where(FeedRow.kind == "part", FeedRow.item_id.in_(keys))
            )
        )

    async def record_parts(self, conversation_id: str, entries: Sequence[PartEntry]) -> None:
        """One entry per changed part, in this transaction; a key is written once."""
        known = await self.known([e.key for e in entries])
        for entry in entries:
            if entry.key not in known:
                data = {"message_id": entry.message_id, "part": entry.part, "cause": entry.cause}
                await self._add(conversation_id, "part", entry.key, entry.run_id, data)

    async def _add(
        self,
        conversation_id: str,
        kind: FeedKind,
        item_id: str,
        run_id: str | None,
        data: dict[str, Any],
    ) -> None:
        """One entry, numbered after the conversation's last in the same statement. The
        caller holds the conversation's row lock (the run claim, `conversations.lock`),
        so numbers follow commit order and a reader never sees a smaller one appear later."""
        await self._session.execute(
            INSERT_FEED_ENTRY,
            {
                "p_cid": conversation_id,
                "p_kind": kind,
                "p_item": item_id,
                "p_run": run_id,
                "p_data": data,
                "p_now": utcnow(),
            },
        )
        self._touched.add(conversation_topic(conversation_id))

    async def head(self, conversation_id: str) -> int:
        seq = await self._session.scalar(
            select(func.max(FeedRow.seq)).where(FeedRow.conversation_id == conversation_id)
        )
        return int(seq or 0)

    async def after(self, conversation_id: str, seq: int, *, limit: int = 200) -> list[FeedEntry]:
        rows = await self._session.scalars(
            select(FeedRow)
            .where(FeedRow.conversation_id == conversation_id, FeedRow.seq > seq)
            .order_by(FeedRow.seq)
            .limit(limit)
        )
        return [FeedEntry(r.seq, r.kind, r.run_id, r.data) for r in rows]

    async def run_at(self, conversation_id: str, seq: int) -> FeedEntry | None:
        """The last run started at or before `seq`: the run a reader at `seq` is in."""
        row = await self._session.scalar(
            select(FeedRow)
            .where(
                FeedRow.conversation_id == conversation_id,
                FeedRow.kind == "run",
                FeedRow.seq <= seq,
            )
            .order_by(FeedRow.seq.desc())
            .limit(1)
        )
        return None if row is None else FeedEntry(row.seq, row.kind, row.run_id, row.data)
