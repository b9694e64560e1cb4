"""The bus between instances, on the real Redis at 127.0.0.1:6379: what one process
publishes, another hears, in order, from the moment `subscribe` returns; a broken
connection is told as a gap and the bus comes back by itself. Each test has its own
channel prefix."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
from redis.asyncio import Redis

from app.redis.outage import RedisOutage
from app.runs.bus import GAP, Subscription
from app.runs.redis_bus import RedisBus
from tests.e2e.conftest import free_port
from tests.limits.conftest import reachable_redis_url

MakeBus = Callable[[], Awaitable[RedisBus]]


@pytest.fixture
async def make_bus() -> AsyncIterator[MakeBus]:
    """`await make_bus()`: a bus of its own (as another process would open) on this
    test's prefix."""
    url = reachable_redis_url()
    prefix = f"test:{uuid.uuid4().hex}:"
    buses: list[RedisBus] = []

    async def make() -> RedisBus:
        bus = RedisBus(Redis.from_url(url, client_name=prefix.replace(":", "-")), prefix=prefix)
        buses.append(bus)
        return bus

    yield make
    for bus in buses:
        await bus.aclose()


async def test_what_one_instance_publishes_another_hears_in_order(make_bus: MakeBus) -> None:
    a, b = await make_bus(), await make_bus()
    async with b.subscribe("run:1") as messages:
        # No sleep: once subscribe returns, Redis has the subscription.
        for n in range(50):
            await a.publish("run:1", b"%d" % n)
        await a.publish("run:2", b"other topic")
        heard = [await asyncio.wait_for(messages.get(), 2) for _ in range(50)]
    assert heard == [b"%d" % n for n in range(50)]
    assert b.listening("run:1") == 0


async def test_subscribers_of_one_process_share_one_redis_subscription(
    make_bus: MakeBus,
) -> None:
    a, b = await make_bus(), await make_bus()
    async with b.subscribe("t") as one, b.subscribe("t") as two:
        await a.publish("t", b"x")
        assert await asyncio.wait_for(one.get(), 2) == b"x"
        assert await asyncio.wait_for(two.get(), 2) == b"x"
        assert await _subscribers(a, "t") == 1
    # The last one gone, the channel is unsubscribed (nobody hears what comes next).
    for _ in range(40):
        if await _subscribers(a, "t") == 0:
            break
        await asyncio.sleep(0.05)
    assert await _subscribers(a, "t") == 0


async def test_buses_on_other_prefixes_hear_nothing(make_bus: MakeBus) -> None:
    a = await make_bus()
    url = reachable_redis_url()
    elsewhere = RedisBus(Redis.from_url(url), prefix=f"test:{uuid.uuid4().hex}:")
    try:
        async with elsewhere.subscribe("run:1") as messages:
            await a.publish("run:1", b"not for you")
            with pytest.raises(TimeoutError):
                await asyncio.wait_for(messages.get(), 0.3)
    finally:
        await elsewhere.aclose()


async def test_a_broken_connection_is_a_gap_and_the_bus_comes_back(make_bus: MakeBus) -> None:
    a, b = await make_bus(), await make_bus()
    async with b.subscribe("run:1") as messages:
        await a.publish("run:1", b"before")
        assert await asyncio.wait_for(messages.get(), 2) == b"before"

        await _kill_pubsub_connections(a, b)
        assert await asyncio.wait_for(messages.get(), 5) is GAP

        # Resubscribed by itself: what is published from then on arrives (what is
        # published while it reconnects is lost, and told as a gap).
        heard: bytes | None = None
        for n in range(100):
            await a.publish("run:1", b"after %d" % n)
            try:
                message = await asyncio.wait_for(messages.get(), 0.1)
            except TimeoutError:
                continue
            if isinstance(message, bytes):
                heard = message
                break
        assert heard is not None and heard.startswith(b"after ")


async def _subscribers(bus: RedisBus, topic: str) -> int:
    client: Redis = bus._client
    prefix: str = bus._prefix
    counts = await client.pubsub_numsub(prefix + topic)
    return int(counts[0][1])


async def _kill_pubsub_connections(via: RedisBus, of: RedisBus) -> None:
    """Close `of`'s pub/sub connection from the server side (only this test's)."""
    client: Redis = via._client
    name = of._prefix.replace(":", "-")
    for entry in await client.client_list():
        if entry.get("name") == name and "sub" in entry.get("cmd", ""):
            await client.client_kill_filter(_id=entry["id"])


class Forwarder:
    """A TCP port in front of the test Redis (or of `target`, another port on 127.0.0.1)
    that can go down and come back, or go silent: while `frozen`, every byte either way is
    dropped and the connections stay open (a partition, a NAT that forgot the flow)."""

    def __init__(self, target: int = 6379) -> None:
        self.port = free_port()
        self.target = target
        self.frozen = False
        self._server: asyncio.Server | None = None
        self._writers: list[asyncio.StreamWriter] = []

    async def up(self) -> None:
        self._server = await asyncio.start_server(self._pipe, "127.0.0.1", self.port)

    async def down(self) -> None:
        assert self._server is not None
        self._server.close()
        for writer in self._writers:
            writer.close()
        self._writers.clear()
        await self._server.wait_closed()

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        upstream_reader, upstream_writer = await asyncio.open_connection("127.0.0.1", self.target)
        self._writers += [writer, upstream_writer]

        async def copy(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
            with contextlib.suppress(ConnectionError, OSError):
                while data := await source.read(65536):
                    if not self.frozen:
                        sink.write(data)
                        await sink.drain()
            sink.close()

        await asyncio.gather(copy(reader, upstream_writer), copy(upstream_reader, writer))


async def heard_again(publisher: Redis, channel: str, messages: Subscription) -> bytes:
    """Publish until the subscriber hears one (it may be reconnecting meanwhile)."""
    for n in range(100):
        await publisher.publish(channel, b"m%d" % n)
        with contextlib.suppress(TimeoutError):
            message = await asyncio.wait_for(messages.get(), 0.1)
            if isinstance(message, bytes):
                return message
    raise AssertionError("the bus never came back")


async def test_a_redis_down_at_start_and_gone_for_a_while_is_caught_up_with() -> None:
    url = reachable_redis_url()
    redis = Forwarder()
    prefix = f"test:{uuid.uuid4().hex}:"
    bus = RedisBus.from_url(f"redis://127.0.0.1:{redis.port}/0", timeout=0.5, prefix=prefix)
    publisher = Redis.from_url(url)
    try:
        # Redis unreachable: subscribing still returns (the reader then uses the database).
        async with bus.subscribe("run:1") as messages:
            await redis.up()
            assert (await heard_again(publisher, prefix + "run:1", messages)).startswith(b"m")

            await redis.down()
            assert await asyncio.wait_for(messages.get(), 5) is GAP
            await redis.up()
            assert (await heard_again(publisher, prefix + "run:1", messages)).startswith(b"m")
    finally:
        await bus.aclose()
        await publisher.aclose()
        await redis.down()


async def test_a_connection_that_dies_silently_is_a_gap_and_the_bus_comes_back() -> None:
    # No error, no close: only the bus's own PING finds out (else it listened for ever,
    # deaf to every cancel and catch-up meant for its process).
    url = reachable_redis_url()
    redis = Forwarder()
    await redis.up()
    prefix = f"test:{uuid.uuid4().hex}:"
    outage = RedisOutage(2.0)
    bus = RedisBus.from_url(
        f"redis://127.0.0.1:{redis.port}/0", timeout=0.5, prefix=prefix, outage=outage
    )
    publisher = Redis.from_url(url)
    try:
        async with bus.subscribe("run:1") as messages:
            assert (await heard_again(publisher, prefix + "run:1", messages)).startswith(b"m")

            redis.frozen = True
            await publisher.publish(prefix + "run:1", b"lost")
            assert await asyncio.wait_for(messages.get(), 10) is GAP
            # Only this flow died: the limiter, sharing the breaker, still asks Redis.
            assert not outage.open and outage.state == "ok"

            redis.frozen = False
            assert (await heard_again(publisher, prefix + "run:1", messages)).startswith(b"m")
    finally:
        await bus.aclose()
        await publisher.aclose()
        await redis.down()
