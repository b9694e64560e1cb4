"""The Redis circuit breaker: a call Redis did not answer opens it for the retry window
(calls meanwhile are skipped, not made), then one call probes while the others still
skip; an answer closes it, even an error reply, a failure opens it again. A window of 0
skips nothing. Our own pool being full says nothing about Redis. With a hung Redis of
the test's own (SIGSTOP), the limiter and the bus skip it after the first timeout."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest
from redis.asyncio import Redis
from redis.exceptions import MaxConnectionsError, ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

from app.limits.backends import BackendUnavailable
from app.limits.redis_backend import RedisBackend
from app.redis.outage import RedisOutage, RedisSkipped
from app.runs.redis_bus import RedisBus
from tests.e2e.redis_server import loading_redis, own_redis
from tests.support.ports import closed_port


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


async def fail(outage: RedisOutage, error: Exception) -> None:
    with pytest.raises(type(error)):
        async with outage.call():
            raise error


async def answer(outage: RedisOutage) -> None:
    async with outage.call():
        pass


async def test_a_timeout_skips_redis_for_the_window_then_one_call_probes() -> None:
    clock = Clock()
    outage = RedisOutage(2.0, clock=clock)
    await answer(outage)
    await fail(outage, RedisTimeoutError("hung"))
    assert outage.open
    with pytest.raises(RedisSkipped):
        await answer(outage)

    clock.now += 2.0
    probe_in = asyncio.Event()
    probe_out = asyncio.Event()

    async def probe() -> None:
        async with outage.call():
            probe_in.set()
            await probe_out.wait()

    probing = asyncio.create_task(probe())
    await probe_in.wait()
    with pytest.raises(RedisSkipped):  # one probe at a time: the others still skip
        await answer(outage)
    probe_out.set()
    await probing
    assert not outage.open
    await answer(outage)


async def test_a_failed_probe_opens_it_for_another_window() -> None:
    clock = Clock()
    outage = RedisOutage(2.0, clock=clock)
    await fail(outage, ConnectionRefusedError())
    clock.now += 2.5
    await fail(outage, RedisTimeoutError("still hung"))
    clock.now += 1.0
    assert outage.open
    with pytest.raises(RedisSkipped):
        await answer(outage)


class Slow:
    """A call to Redis that is under way until `done()`."""

    def __init__(self, outage: RedisOutage) -> None:
        self._inside = asyncio.Event()
        self._release = asyncio.Event()
        self._task = asyncio.create_task(self._call(outage))

    async def _call(self, outage: RedisOutage) -> None:
        async with outage.call():
            self._inside.set()
            await self._release.wait()

    async def started(self) -> Slow:
        await self._inside.wait()
        return self

    async def done(self) -> None:
        self._release.set()
        await self._task


async def test_an_error_reply_to_the_probe_closes_it() -> None:
    clock = Clock()
    outage = RedisOutage(2.0, clock=clock)
    await fail(outage, RedisTimeoutError("hung"))
    clock.now += 2.0

    await fail(outage, ResponseError("WRONGTYPE Operation against a key"))  # the probe

    slow = await Slow(outage).started()  # an ordinary call again, not a second probe
    await answer(outage)  # so the others are not skipped meanwhile
    await slow.done()


async def test_a_window_of_zero_skips_no_call() -> None:
    outage = RedisOutage(0.0, clock=Clock())
    await fail(outage, RedisTimeoutError("hung"))
    assert not outage.open

    slow = await Slow(outage).started()  # the next call tries Redis...
    await answer(outage)  # ...and so does every other one made meanwhile
    await fail(outage, RedisTimeoutError("still hung"))
    await answer(outage)
    await slow.done()
    assert not outage.open


async def test_what_redis_did_not_cause_gives_no_verdict() -> None:
    clock = Clock()
    outage = RedisOutage(2.0, clock=clock)
    await fail(outage, MaxConnectionsError("our pool is full"))
    await fail(outage, ValueError("a bug of ours"))
    assert not outage.open

    await fail(outage, RedisTimeoutError("hung"))
    clock.now += 2.0
    await fail(outage, MaxConnectionsError("our pool is full"))  # the probe: no verdict
    assert outage.open is False  # the next call probes again
    await answer(outage)
    assert not outage.open


async def test_the_limiter_and_the_bus_skip_a_hung_redis_after_its_first_timeout() -> None:
    with own_redis() as redis:
        outage = RedisOutage(120.0)
        backend = RedisBackend.from_url(redis.url, timeout=0.5, outage=outage)
        bus = RedisBus.from_url(redis.url, timeout=0.5, prefix="test:", outage=outage)
        try:
            await bus.publish("run:1", b"up")
            assert await backend.rate("rpm:u", 10, 60) == 0
            redis.hang()
            with pytest.raises(BackendUnavailable, match="TimeoutError"):
                await backend.rate("rpm:u", 10, 60)
            with pytest.raises(RedisSkipped):  # the bus heard of it: no wait of its own
                await bus.publish("run:1", b"hung")
            with pytest.raises(BackendUnavailable, match="RedisSkipped"):
                await backend.rate("rpm:u", 10, 60)
        finally:
            redis.resume()
            await bus.aclose()
            await backend.aclose()


async def test_with_a_window_of_zero_every_limit_check_tries_a_hung_redis() -> None:
    with own_redis() as redis:
        backend = RedisBackend.from_url(redis.url, timeout=0.5, outage=RedisOutage(0.0))
        try:
            assert await backend.rate("rpm:u", 10, 60) == 0
            redis.hang()
            with pytest.raises(BackendUnavailable, match="TimeoutError"):
                await backend.rate("rpm:u", 10, 60)
            checks = [backend.rate("rpm:u", 10, 60) for _ in range(2)]
            failures = await asyncio.gather(*checks, return_exceptions=True)
            assert all("TimeoutError" in str(f) for f in failures), failures  # none skipped
        finally:
            redis.resume()
            await backend.aclose()


async def test_a_bus_alone_skips_after_a_publish_that_timed_out() -> None:
    with own_redis() as redis:
        bus = RedisBus(
            Redis.from_url(redis.url, socket_timeout=0.5), prefix="test:", outage=RedisOutage(120.0)
        )
        try:
            await bus.publish("run:1", b"up")
            redis.hang()
            with pytest.raises(RedisTimeoutError):
                await bus.publish("run:1", b"hung")
            with pytest.raises(RedisSkipped):
                await bus.publish("run:1", b"hung")
        finally:
            redis.resume()
            await bus.aclose()


async def test_the_bus_hearing_from_redis_again_closes_the_circuit() -> None:
    with own_redis() as redis:
        outage = RedisOutage(120.0)
        bus = RedisBus.from_url(redis.url, timeout=0.5, prefix="test:", outage=outage)
        try:
            async with bus.subscribe("run:1"):
                redis.hang()
                with pytest.raises(RedisTimeoutError):
                    await bus.publish("run:1", b"hung")
                assert outage.open
                redis.resume()
                async with bus.subscribe("run:2"):  # confirmed once Redis answers
                    pass
                for _ in range(100):
                    if not outage.open:
                        break
                    await asyncio.sleep(0.05)
                assert not outage.open
                await bus.publish("run:1", b"back")
        finally:
            redis.resume()
            await bus.aclose()


def told(caplog: pytest.LogCaptureFixture) -> list[tuple[str, str]]:
    return [(r.levelname, r.getMessage()) for r in caplog.records if r.name == "chat_bff.redis"]


@pytest.mark.parametrize("password", ["wrong", None], ids=["WRONGPASS", "NOAUTH"])
async def test_redis_refusing_our_credentials_is_told_once_as_a_configuration_error(
    password: str | None, caplog: pytest.LogCaptureFixture
) -> None:
    with own_redis(password="right") as redis:
        clock = Clock()
        outage = RedisOutage(2.0, clock=clock)
        url = redis.url_with(password) if password else redis.url
        backend = RedisBackend.from_url(url, timeout=0.5, outage=outage)
        try:
            with caplog.at_level(logging.INFO, logger="chat_bff.redis"):
                with pytest.raises(BackendUnavailable, match="AuthenticationError"):
                    await backend.rate("rpm:u", 10, 60)
                with pytest.raises(BackendUnavailable, match="RedisSkipped"):
                    await backend.rate("rpm:u", 10, 60)  # no login of its own meanwhile
                clock.now += 2.0
                with pytest.raises(BackendUnavailable, match="AuthenticationError"):
                    await backend.rate("rpm:u", 10, 60)  # the probe finds it refused again
        finally:
            await backend.aclose()

    [(level, message)] = told(caplog)  # once, not at every probe
    assert level == "ERROR"
    assert "refused the credentials in REDIS_URL" in message
    assert outage.state == "auth_failed"


async def test_a_redis_loading_its_data_is_skipped_for_the_window_and_told_as_loading(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with loading_redis(tmp_path) as redis:
        clock = Clock()
        outage = RedisOutage(2.0, clock=clock)
        backend = RedisBackend.from_url(redis.url, timeout=0.5, outage=outage)
        try:
            with caplog.at_level(logging.INFO, logger="chat_bff.redis"):
                with pytest.raises(BackendUnavailable, match="BusyLoadingError"):
                    await backend.rate("rpm:u", 10, 60)
                with pytest.raises(BackendUnavailable, match="RedisSkipped"):
                    await backend.rate("rpm:u", 10, 60)
                clock.now += 2.0
                with pytest.raises(BackendUnavailable, match="BusyLoadingError"):
                    await backend.rate("rpm:u", 10, 60)  # retried after the window
        finally:
            await backend.aclose()

    [(level, message)] = told(caplog)
    assert level == "WARNING"
    assert "loading its data" in message
    assert outage.state == "loading"


async def test_the_bus_refused_by_redis_tells_the_breaker_instead_of_warning_at_each_try(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with own_redis(password="right") as redis:
        outage = RedisOutage(120.0)
        url = redis.url_with("wrong")
        bus = RedisBus.from_url(url, timeout=0.5, prefix="test:", outage=outage)
        try:
            with caplog.at_level(logging.INFO):
                async with bus.subscribe("run:1"):
                    pass
        finally:
            await bus.aclose()

    assert [r.getMessage() for r in caplog.records if r.name == "chat_bff.runs"] == []
    assert [level for level, _ in told(caplog)] == ["ERROR"]
    assert outage.state == "auth_failed"


class CountingBus(RedisBus):
    """A bus whose listener pauses not at all between reconnects, and counts them."""

    attempts = 0
    enough = asyncio.Event()

    async def _pause(self, failures: int) -> None:
        self.attempts += 1
        if self.attempts >= 20:
            self.enough.set()
        await asyncio.sleep(0)


async def test_a_bus_whose_redis_is_down_tells_the_breaker_once_not_at_each_reconnect(
    caplog: pytest.LogCaptureFixture,
) -> None:
    outage = RedisOutage(2.0)
    url = f"redis://127.0.0.1:{closed_port()}/0"
    bus = CountingBus.from_url(url, timeout=0.5, prefix="test:", outage=outage)
    assert isinstance(bus, CountingBus)
    bus.enough = asyncio.Event()
    try:
        with caplog.at_level(logging.INFO):
            for _ in range(10):  # ten readers of a run while Redis is down
                async with bus.subscribe("run:1"):
                    pass
            await asyncio.wait_for(bus.enough.wait(), 10)  # twenty reconnects tried
    finally:
        await bus.aclose()

    assert [r.getMessage() for r in caplog.records if r.name == "chat_bff.runs"] == []
    assert [level for level, _ in told(caplog)] == ["WARNING"]
    assert outage.state == "unreachable"
