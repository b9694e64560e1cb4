"""Following a conversation, not one run: every run of it as it happens, and the tool
parts that change outside a run (an approval decided, a proposal batch settled), so
every open tab of a conversation shows the same thing without reloading.

Two durable logs make the stream, both in the database: the conversation's feed
(`app.store.repos.feed`: a run started, with the person's message it answers; a part
changed; numbered per conversation) and
each run's event log (numbered per run). A reader's position is the pair

    Cursor(feed, seq)    "<feed>.<seq>" on the wire (the SSE `id:`, sent back as Last-Event-ID)

`feed` is the last feed entry it has, `seq` the last event it has of the run that `feed`
is in (the last `run` entry at or before `feed`); the message a run answers comes at its
run's `seq` 0, before the run's first event, so a reader past it never reads it twice.
Feed entries are read in order; a `run` entry is entered only once the run before it is
read to its end (one run at a time per conversation, so that end exists), and then the
new run is read from its first event.
Part changes and the current run's events interleave as they come; since each of the two
positions only grows, resuming from any cursor gives exactly what came after it, with
no gap and no duplicate, on any instance and after a restart.

Live: committed feed entries are announced on the bus topic `conversation:<id>`
(`Database.announce`), and run events come through `RunReader` (memory, the bus, or the
database). A follower also looks at the feed every `POLL_SECONDS`, so a lost
announcement only delays it, and at that pace writes what time changed (`expire`: an
approval that expired while its card waited).
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from app.domain.events import PartUpdate, SequencedEvent
from app.domain.messages import Message
from app.domain.parts import ToolPart
from app.runs.bus import Bus, Subscription
from app.store.database import Database
from app.store.repos.feed import FeedEntry, conversation_topic

POLL_SECONDS = 1.0
# A position as the `id:` of a frame names it: `<feed>.<seq>`, ASCII digits only.
CURSOR_PATTERN = r"^([0-9]{1,18})\.([0-9]{1,10})$"
_CURSOR = re.compile(CURSOR_PATTERN)


@dataclass(frozen=True, slots=True)
class Cursor:
    feed: int
    seq: int

    def __str__(self) -> str:
        return f"{self.feed}.{self.seq}"

    @classmethod
    def parse(cls, text: str) -> Cursor | None:
        match = _CURSOR.fullmatch(text)
        return None if match is None else cls(int(match[1]), int(match[2]))


@dataclass(frozen=True, slots=True)
class Opened:
    """The first item of every follow: where the reader stands, and the run in progress."""

    conversation_id: str
    active_run_id: str | None


@dataclass(frozen=True, slots=True)
class Added:
    """A message a person added (another tab's included), before the run it starts."""

    message: Message
    run_id: str  # the run that answers it


@dataclass(frozen=True, slots=True)
class Followed:
    cursor: Cursor  # the reader's position once it has this item
    item: SequencedEvent | Opened | Added


# Writes the part changes that time makes (approvals expiring): (owner id, conversation id).
Expire = Callable[[str, str], Awaitable[None]]


def _due(last: float, every: float) -> bool:
    return time.monotonic() - last >= every


class RunSource(Protocol):
    """What the follower needs of the run manager (`Runs`)."""

    async def position(
        self, owner_id: str, run_id: str, conversation_id: str | None
    ) -> tuple[bool, int]: ...

    def follow(
        self, owner_id: str, run_id: str, *, conversation_id: str | None, after: int = 0
    ) -> AsyncIterator[list[SequencedEvent]]: ...


class _Tail:
    """The run a reader is in, one batch at a time, read ahead in a task so that waiting
    for it and for the feed can be one wait."""

    def __init__(self, run_id: str, batches: AsyncIterator[list[SequencedEvent]]) -> None:
        self.run_id = run_id
        self._batches = batches
        self._next: asyncio.Task[list[SequencedEvent]] | None = None

    def pending(self) -> asyncio.Task[list[SequencedEvent]]:
        if self._next is None:
            self._next = asyncio.ensure_future(anext(self._batches))
        return self._next

    def take(self) -> list[SequencedEvent] | None:
        """The batch the finished task read; None at the run's end."""
        task, self._next = self.pending(), None
        try:
            return task.result()
        except StopAsyncIteration:
            return None

    async def rest(self) -> AsyncIterator[list[SequencedEvent]]:
        """Everything up to the run's end (the run has ended: a newer one started)."""
        while True:
            await asyncio.wait([self.pending()])
            batch = self.take()
            if batch is None:
                return
            yield batch

    async def aclose(self) -> None:
        if self._next is not None:
            self._next.cancel()
            with contextlib.suppress(asyncio.CancelledError, StopAsyncIteration):
                await self._next
        aclose = getattr(self._batches, "aclose", None)
        if aclose is not None:
            await aclose()


class ConversationFollow:
    def __init__(
        self,
        db: Database,
        runs: RunSource,
        bus: Bus,
        *,
        expire: Expire | None = None,
        poll_seconds: float = POLL_SECONDS,
    ) -> None:
        self._db = db
        self._runs = runs
        self._bus = bus
        self._expire = expire
        self._poll_seconds = poll_seconds

    async def check(self, owner_id: str, conversation_id: str) -> None:
        """NotFound unless the conversation is the caller's (before any 200 goes out)."""
        async with self._db.read() as tx:
            await tx.conversations.get(owner_id, conversation_id)

    async def follow(
        self,
        owner_id: str,
        conversation_id: str,
        after: Cursor | None,
        *,
        stop: Callable[[], bool] = lambda: False,
    ) -> AsyncIterator[list[Followed]]:
        """`Opened`, then batches of what comes after `after` (a fresh reader: after the
        feed's head, with the run in progress from its start), until `stop()`."""
        reader = _Reader(self._runs, owner_id, conversation_id)
        async with self._bus.subscribe(conversation_topic(conversation_id)) as wake:
            try:
                yield [await self._open(reader, after)]
                looked = 0.0
                while not stop():
                    if self._expire is not None and _due(looked, self._poll_seconds):
                        looked = time.monotonic()
                        await self._expire(owner_id, conversation_id)
                    entries = await self._entries(conversation_id, reader.cursor.feed)
                    for entry in entries:
                        async for batch in reader.enter(entry):
                            yield batch
                    if entries:
                        continue
                    news = await reader.wait(wake, self._poll_seconds)
                    if news:
                        yield news
            finally:
                await reader.close()

    async def _open(self, reader: _Reader, after: Cursor | None) -> Followed:
        async with self._db.read() as tx:
            await tx.conversations.get(reader.owner_id, reader.conversation_id)
            head = await tx.feed.head(reader.conversation_id)
            if after is not None and after.feed > head:
                # Ahead of the feed (kept across a database restore, say): no entry it waits
                # for would ever come, so it reads as a fresh reader. Not so a `seq` ahead
                # of the stored run: live events reach readers before they are stored.
                after = None
            feed = after.feed if after is not None else head
            run = await tx.feed.run_at(reader.conversation_id, feed)
        return await reader.open(feed, after.seq if after is not None else None, run)

    async def _entries(self, conversation_id: str, after: int) -> list[FeedEntry]:
        async with self._db.read() as tx:
            return await tx.feed.after(conversation_id, after)


class _Reader:
    """One reader's position and the run it is in."""

    def __init__(self, runs: RunSource, owner_id: str, conversation_id: str) -> None:
        self._runs = runs
        self.owner_id = owner_id
        self.conversation_id = conversation_id
        self.cursor = Cursor(0, 0)
        self._tail: _Tail | None = None

    async def open(self, feed: int, seq: int | None, run: FeedEntry | None) -> Followed:
        """Stand at `feed`; in its run after `seq` (None: a fresh reader, which reads a run
        in progress from its start and a finished one not at all)."""
        active = None
        if run is not None and run.run_id is not None:
            finished, last = await self._runs.position(
                self.owner_id, run.run_id, self.conversation_id
            )
            if seq is None:
                seq = last if finished else 0
            active = None if finished else run.run_id
            if not finished or seq < last:
                self._follow(run.run_id, seq)
        self.cursor = Cursor(feed, seq or 0)
        return Followed(self.cursor, Opened(self.conversation_id, active))

    def _follow(self, run_id: str, after: int) -> None:
        batches = self._runs.follow(
            self.owner_id, run_id, conversation_id=self.conversation_id, after=after
        )
        self._tail = _Tail(run_id, batches)

    async def enter(self, entry: FeedEntry) -> AsyncIterator[list[Followed]]:
        """Read one feed entry. What the current run said before the entry was written
        comes first, whether live or replayed: all of it when the entry is a newer run,
        and when the run has ended (a decision on a card of a paused run, say), so that
        a replayed `confirm_required` never lands after the decision that followed it."""
        if self._tail is not None and (entry.kind == "run" or await self._ended(self._tail)):
            async for batch in self._tail.rest():
                yield self._events(batch)
            await self.close()
        if entry.kind == "run" and entry.run_id is not None:
            self.cursor = Cursor(entry.seq, 0)
            self._follow(entry.run_id, 0)
            if entry.data.get("message"):  # before the run's events, at the run's position 0
                added = Added(Message.model_validate(entry.data["message"]), entry.run_id)
                yield [Followed(self.cursor, added)]
            return
        self.cursor = Cursor(entry.seq, self.cursor.seq)
        if entry.kind == "part":
            yield [Followed(self.cursor, SequencedEvent(seq=0, event=_part_update(entry)))]

    async def _ended(self, tail: _Tail) -> bool:
        finished, _ = await self._runs.position(self.owner_id, tail.run_id, self.conversation_id)
        return finished

    async def wait(self, wake: Subscription, patience: float) -> list[Followed] | None:
        """The current run's next batch, or None when the feed may have news."""
        woken = asyncio.ensure_future(wake.get())
        waiting: set[asyncio.Future[Any]] = {woken}
        if self._tail is not None:
            waiting.add(self._tail.pending())
        try:
            done, _ = await asyncio.wait(
                waiting, timeout=patience, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            woken.cancel()
        if self._tail is None or self._tail.pending() not in done:
            return None
        batch = self._tail.take()
        if batch is None:  # the run ended; the next one comes through the feed
            await self._tail.aclose()
            self._tail = None
            return None
        return self._events(batch)

    def _events(self, batch: list[SequencedEvent]) -> list[Followed]:
        out = []
        for item in batch:
            self.cursor = Cursor(self.cursor.feed, item.seq)
            out.append(Followed(self.cursor, item))
        return out

    async def close(self) -> None:
        if self._tail is not None:
            await self._tail.aclose()
            self._tail = None


def _part_update(entry: FeedEntry) -> PartUpdate:
    return PartUpdate(
        run_id=entry.run_id or "",
        message_id=str(entry.data["message_id"]),
        part=ToolPart.model_validate(entry.data["part"]),
        cause=entry.data["cause"],
    )
