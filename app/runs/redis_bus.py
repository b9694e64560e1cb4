"""The live bus between instances (`REDIS_URL`): Redis pub/sub behind the `Bus` protocol.

One pub/sub connection per process carries every topic this process listens to; local
subscribers of a topic share one Redis subscription (SUBSCRIBE on the first, UNSUBSCRIBE
after the last), and a listener task hands each message to them through the same bounded
buffers as the in-process bus. `subscribe` returns once Redis confirmed the subscription,
so a reader that subscribes and then reads the durable log misses nothing in between.

Pub/sub is at most once: a message published while the connection is down, or dropped
because a subscriber's Redis output buffer overflowed (Redis then closes the connection),
is gone. The listener sees the broken connection, tells every local subscriber `GAP` (so
each reads what it missed from the database, as after any gap) and reconnects with backoff,
subscribing again to every topic still held; once Redis confirms the new subscriptions it
tells `GAP` again (what was published until then is lost, and is now in the database). A
connection can also die without a word (a network partition, a NAT or load balancer that
drops idle flows): nothing is read and nothing raises, and every message meant for this
process (a cancel for a run it holds among them) would be lost unnoticed for as long as
the process lives. So after `QUIET_SECONDS` with nothing heard the listener PINGs its
connection, and one that does not answer within the timeout is broken like any other
(but the breaker is not told: the flow died, not necessarily Redis). Publishing never
blocks a run for long: one try with the socket timeout, errors to the caller; after a
publish or a subscription that Redis did not answer, publishing fails at once and
subscribing does not wait for Redis's confirmation for `REDIS_RETRY_SECONDS`
(`app.redis.outage`), so a Redis that hangs does not hold every commit's announcement and
every reader for the whole timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, cast

from redis.asyncio import Redis
from redis.asyncio.client import PubSub
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import TimeoutError as RedisTimeoutError

from app.redis.outage import RedisOutage, failure_of
from app.runs.bus import Subscription

log = logging.getLogger("chat_bff.runs")

# The channel every process holds, so the pub/sub connection always exists to listen on.
_KEEPALIVE = "~"
# Pauses between attempts to reconnect a broken pub/sub connection.
RECONNECT_DELAYS = (0.05, 0.2, 0.5, 1.0, 2.0)
# With nothing heard on the pub/sub connection for this long, it is PINGed (see above): a
# PING on a quiet process every 2 s, which also keeps what `/readyz` says of Redis fresh.
QUIET_SECONDS = 2.0


class Silent(RedisTimeoutError):
    """The pub/sub connection did not answer a PING: it died without being closed."""


class RedisBus:
    """Topics become channels `<prefix><topic>` on one Redis; see the module docstring."""

    shared = True

    def __init__(
        self,
        client: Redis,
        *,
        prefix: str = "chatbff:bus:0:",
        outage: RedisOutage | None = None,
    ) -> None:
        self._client = client
        self._outage = outage or RedisOutage(0.0)
        self._prefix = prefix
        self._topics: dict[str, set[Subscription]] = {}
        self._confirming: dict[str, list[asyncio.Future[None]]] = {}
        self._pubsub: PubSub | None = None
        self._listener: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()
        self._timeout = 5.0
        self._quiet = QUIET_SECONDS
        self._rejoining = False  # resubscribed after a break, not yet confirmed
        self._closed = False

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        timeout: float,
        prefix: str | None = None,
        outage: RedisOutage | None = None,
    ) -> RedisBus:
        """A bus on `url`. Pub/sub channels ignore Redis's database numbers, so the
        default prefix carries the URL's: deployments kept apart by database number stay
        apart on the bus too."""
        client = Redis.from_url(
            url,
            socket_timeout=timeout,
            socket_connect_timeout=timeout,
            retry=Retry(NoBackoff(), 0),  # a broken connection is ours to notice (GAP)
        )
        db = client.connection_pool.connection_kwargs.get("db", 0)
        bus = cls(client, prefix=prefix or f"chatbff:bus:{db}:", outage=outage)
        bus._timeout = timeout
        return bus

    # -- the Bus protocol -------------------------------------------------------------

    async def publish(self, topic: str, message: bytes) -> None:
        async with self._outage.call():
            await self._client.publish(self._prefix + topic, message)

    @asynccontextmanager
    async def subscribe(self, topic: str) -> AsyncIterator[Subscription]:
        subscription = Subscription()
        listeners = self._topics.setdefault(topic, set())
        listeners.add(subscription)
        try:
            if len(listeners) == 1:
                await self._subscribe(topic)
            yield subscription
        finally:
            listeners = self._topics.get(topic, set())
            listeners.discard(subscription)
            if not listeners:
                self._topics.pop(topic, None)
                await self._unsubscribe(topic)

    def listening(self, topic: str) -> int:
        return len(self._topics.get(topic, ()))

    async def ping(self) -> None:
        """One PING on the connections the bus publishes on: `/readyz` asks through them,
        so readiness keeps no connection of its own, and a flood holding every connection
        of the limiter (a pool of its own) cannot make it wait."""
        await self._client.ping()

    async def aclose(self) -> None:
        self._closed = True
        if self._listener is not None:
            self._listener.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._listener
        self._tell_gap()
        if self._pubsub is not None:
            with contextlib.suppress(Exception):
                await self._pubsub.aclose()  # type: ignore[no-untyped-call]
        await self._client.aclose()

    # -- the pub/sub connection -------------------------------------------------------

    async def _subscribe(self, topic: str) -> None:
        """SUBSCRIBE and wait for Redis to confirm it (a bounded wait: a reader that goes
        on unconfirmed may miss messages, which it then finds as a gap)."""
        channel = self._prefix + topic
        confirmed = asyncio.get_running_loop().create_future()
        self._confirming.setdefault(channel, []).append(confirmed)
        try:
            pubsub = await self._connected()
            await pubsub.subscribe(channel)
            if self._outage.open:  # it would not confirm in time: read the log instead
                return
            async with asyncio.timeout(self._timeout):
                await confirmed
        except TimeoutError:
            self._outage.failed("TimeoutError")
            log.warning("bus: Redis did not confirm a subscription", extra={"topic": topic})
        except Exception as exc:
            if not self._refused(exc):
                log.warning("bus: could not subscribe", extra={"topic": topic}, exc_info=True)
        finally:
            waiting = self._confirming.get(channel, [])
            if confirmed in waiting:
                waiting.remove(confirmed)
            if not waiting:
                self._confirming.pop(channel, None)

    async def _unsubscribe(self, topic: str) -> None:
        if self._pubsub is None or self._closed:
            return
        try:
            await self._pubsub.unsubscribe(self._prefix + topic)
        except Exception as exc:
            if not self._refused(exc):
                log.warning("bus: could not unsubscribe", extra={"topic": topic}, exc_info=True)

    async def _connected(self) -> PubSub:
        """The pub/sub connection; the first call starts the listener, which from then on
        keeps it connected (a Redis down at start-up is retried like a broken one)."""
        async with self._lock:
            if self._listener is None:
                self._pubsub = self._client.pubsub()
                try:
                    await self._pubsub.subscribe(*self._channels())
                finally:
                    self._listener = asyncio.get_running_loop().create_task(
                        self._listen(), name="redis bus"
                    )
            assert self._pubsub is not None
            return self._pubsub

    def _channels(self) -> list[str]:
        return [self._prefix + _KEEPALIVE, *(self._prefix + t for t in self._topics)]

    async def _listen(self) -> None:
        failures = 0
        while not self._closed:
            pubsub = self._pubsub
            if pubsub is None or not pubsub.subscribed:  # never connected, or lost
                await self._pause(failures)
                failures += 1
                await self._reconnect()
                continue
            try:
                message = await self._heard(pubsub)
            except asyncio.CancelledError:
                raise
            except Silent:
                # This connection's flow died; Redis itself may be fine (the limiter's
                # connections answer): the breaker is not told, or a false alarm (a
                # process starved of CPU past the timeout) would have the limiter skip
                # Redis, and the slots it gives back meanwhile, for the retry window.
                if failures == 0:  # once a spell: reconnecting through it finds it again
                    log.warning("bus: the Redis connection went silent; reconnecting")
                self._tell_gap()
                await self._pause(failures)
                failures += 1
                await self._reconnect()
                continue
            except Exception as exc:
                # A channel the ACL refuses (NOPERM) is the breaker's to say, once; it
                # comes back at each try, which a warning would repeat every 2 s.
                if failure_of(exc) != "no_permission" or not self._refused(exc):
                    log.warning("bus: the Redis connection broke; reconnecting", exc_info=True)
                self._tell_gap()
                await self._pause(failures)
                failures += 1
                await self._reconnect()
                continue
            failures = 0
            self._dispatch(message)

    async def _heard(self, pubsub: PubSub) -> dict[str, Any]:
        """The next message on the connection; after `QUIET_SECONDS` of silence it must
        answer a PING within the timeout, or it is `Silent`."""
        message = await pubsub.get_message(timeout=self._quiet)
        if message is None:
            await pubsub.ping()
            message = await pubsub.get_message(timeout=self._timeout)
            if message is None:
                raise Silent("the pub/sub connection did not answer a PING")
        return cast("dict[str, Any]", message)

    async def _pause(self, failures: int) -> None:
        await asyncio.sleep(RECONNECT_DELAYS[min(failures, len(RECONNECT_DELAYS) - 1)])

    async def _reconnect(self) -> None:
        old, self._pubsub = self._pubsub, self._client.pubsub()
        if old is not None:
            with contextlib.suppress(Exception):
                await old.aclose()  # type: ignore[no-untyped-call]
        self._rejoining = True
        try:
            await self._pubsub.subscribe(*self._channels())
        except Exception as exc:
            if not self._refused(exc):
                log.warning("bus: Redis is still unreachable", exc_info=True)
            return
        # Messages published before the new subscriptions took effect are lost: the
        # subscribers read them from the log once Redis confirms them (`_dispatch`); read
        # before, a cancel kept on a run's row and published meanwhile could be missed.

    def _refused(self, exc: Exception) -> bool:
        """A Redis that is down, refused our credentials or is loading its data: the
        breaker hears it (and says so once, and once more when Redis answers again)
        rather than this bus at every reconnect and every reader's subscription."""
        failure = failure_of(exc)
        if failure is None:
            return False
        self._outage.failed(str(exc) if failure == "no_permission" else type(exc).__name__, failure)
        return True

    def _dispatch(self, message: dict[str, Any]) -> None:
        self._outage.answered()  # whatever it says, Redis is there
        channel = _text(message["channel"])
        kind = message["type"]
        if kind == "subscribe":
            if self._rejoining:  # one SUBSCRIBE for every channel: all of them hold now
                self._rejoining = False
                self._tell_gap()
            for waiting in self._confirming.pop(channel, []):
                if not waiting.done():
                    waiting.set_result(None)
            return
        if kind != "message" or not channel.startswith(self._prefix):
            return
        data = message["data"]
        for subscription in self._topics.get(channel[len(self._prefix) :], ()):
            subscription.put(data if isinstance(data, bytes) else str(data).encode())

    def _tell_gap(self) -> None:
        for listeners in self._topics.values():
            for subscription in listeners:
                subscription.interrupt()


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
