"""The live bus: "something happened on topic T", told to whoever listens, now.

The database is the durable log; the bus only makes readers wake up without polling. A
message is delivered at most once, to the subscribers listening when it is published,
each through a bounded buffer: a subscriber that falls behind loses the oldest messages
and is told so (`Gap`), and reads what it missed from the durable log. So every reader
follows the same pattern:

    async with bus.subscribe(topic) as messages:     # subscribe first,
        replay what the durable log holds after my position   # then catch up,
        async for message in messages:               # then follow;
            if message is GAP: replay from the log again

Topics name what changed: `run:<run_id>`, `conversation:<id>`, `user:<id>`. This
in-process bus serves one process; a Redis implementation of the same protocol carries
the messages between instances.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Protocol


class Gap:
    """Messages were dropped for a subscriber that fell behind: read the durable log."""

    def __repr__(self) -> str:
        return "GAP"


GAP = Gap()
Message = bytes | Gap

# How many undelivered messages one subscriber may hold before the oldest are dropped.
BUFFERED = 256


class Subscription:
    def __init__(self, buffered: int = BUFFERED) -> None:
        self._queue: deque[Message] = deque(maxlen=buffered)
        self._gap = False
        self._ready = asyncio.Event()

    def put(self, message: Message) -> None:
        if len(self._queue) == self._queue.maxlen:
            self._gap = True
        self._queue.append(message)
        self._ready.set()

    def interrupt(self) -> None:
        """Messages may have been lost here (the connection carrying them broke): the
        reader hears `GAP` at this point, after what came before and before what follows."""
        if not self._queue or self._queue[-1] is not GAP:
            self.put(GAP)

    async def get(self) -> Message:
        while True:
            if self._gap:
                self._gap = False
                self._queue.clear()
                return GAP
            if self._queue:
                return self._queue.popleft()
            self._ready.clear()
            await self._ready.wait()

    def __aiter__(self) -> AsyncIterator[Message]:
        return self._messages()

    async def _messages(self) -> AsyncIterator[Message]:
        while True:
            yield await self.get()


class Bus(Protocol):
    # Whether other processes hear what is published here (a reader of another
    # instance's run can follow it through the bus instead of polling the database).
    shared: bool

    async def publish(self, topic: str, message: bytes) -> None:
        """Tell the topic's current subscribers (on every instance)."""
        ...

    def subscribe(self, topic: str) -> AbstractAsyncContextManager[Subscription]:
        """Listen to a topic for the life of the `async with` block."""
        ...

    async def aclose(self) -> None: ...


class LocalBus:
    """The bus of one process."""

    shared = False

    def __init__(self) -> None:
        self._topics: dict[str, set[Subscription]] = {}

    async def publish(self, topic: str, message: bytes) -> None:
        self.deliver(topic, message)

    def deliver(self, topic: str, message: bytes) -> None:
        for subscription in self._topics.get(topic, ()):
            subscription.put(message)

    @asynccontextmanager
    async def subscribe(self, topic: str) -> AsyncIterator[Subscription]:
        subscription = Subscription()
        self._topics.setdefault(topic, set()).add(subscription)
        try:
            yield subscription
        finally:
            listeners = self._topics.get(topic)
            if listeners is not None:
                listeners.discard(subscription)
                if not listeners:
                    del self._topics[topic]

    def listening(self, topic: str) -> int:
        return len(self._topics.get(topic, ()))

    async def aclose(self) -> None:
        self._topics.clear()
