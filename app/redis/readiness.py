"""What `/readyz` says of Redis: news, not a memory.

The breaker's state is what the last call learnt. An instance that had no traffic (just
started, or kept out of rotation) has made no call, and showed `ok` with Redis down or
refusing the password in `REDIS_URL`, which is exactly what an operator looks at `/readyz`
to find out. So when the process has heard nothing of Redis for `FRESH_FOR` seconds, the
readiness check asks it itself: one PING through the breaker, bounded by `timeout`, whose
verdict the breaker keeps (and logs, as for any call). A probe every second costs Redis at
most one PING every `FRESH_FOR` seconds, and none while traffic keeps the state fresh;
concurrent checks share one PING, and while the breaker skips Redis none is sent.

Redis is never a reason to be unready (the service works without it: limits let requests
through, the bus falls back to the database), so this only names its state.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from redis.asyncio import Redis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import RedisError

from app.redis.outage import RedisOutage
from app.redis.state import RedisState

FRESH_FOR = 5.0


class RedisReadiness:
    def __init__(
        self,
        outage: RedisOutage,
        ping: Callable[[], Awaitable[object]],
        *,
        timeout: float,
        fresh_for: float = FRESH_FOR,
        close: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self._outage = outage
        self._ping = ping
        self._timeout = timeout
        self._fresh_for = fresh_for
        self._close = close
        self._lock = asyncio.Lock()

    @classmethod
    def from_url(cls, url: str, outage: RedisOutage, *, timeout: float) -> RedisReadiness:
        """A client of its own (one connection, kept), for a process without the bus's
        connections to ask through; a readiness check never waits for a connection the
        limiter's flood holds."""
        client = Redis.from_url(
            url,
            max_connections=1,
            socket_timeout=timeout,
            socket_connect_timeout=timeout,
            retry=Retry(NoBackoff(), 0),
        )
        return cls(outage, client.ping, timeout=timeout, close=client.aclose)

    async def state(self) -> RedisState:
        """The breaker's state, after a PING of our own when it is not recent."""
        if not self._outage.heard_within(self._fresh_for):
            async with self._lock:  # one PING for every check that arrives meanwhile
                if not self._outage.heard_within(self._fresh_for):
                    await self._probe()
        return self._outage.state

    async def _probe(self) -> None:
        try:
            async with self._outage.call(), asyncio.timeout(self._timeout):
                await self._ping()
        except (RedisError, OSError, TimeoutError):
            pass  # the breaker heard it (or skipped Redis): its state says which

    async def aclose(self) -> None:
        if self._close is not None:
            await self._close()
