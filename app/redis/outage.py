"""A circuit breaker for Redis: after a call times out or cannot connect, calls skip Redis
for a short window instead of each waiting out the timeout again.

A Redis that hangs (the process stopped, the host unreachable) accepts TCP or lets the
connect wait, so every call pays the whole `REDIS_TIMEOUT_SECONDS` before it counts as
down. Without this, every request paid it in its limit check, and every commit in its
announcement on the bus. With it, the first failure opens the circuit for
`REDIS_RETRY_SECONDS`: calls meanwhile fail at once (`RedisSkipped`) and take the same
fallback as a Redis that refused (limits let the request through, the bus's readers use the
database). After the window one call probes Redis while the others keep skipping; its
answer closes the circuit, its failure opens it for another window. A window of 0 skips
nothing: every call tries Redis (and pays the timeout while it hangs).

Only a Redis that did not answer opens it: a reply, even an error reply (`ResponseError`:
a refused command, a script error, out of memory), shows it is up and closes it, and so
does anything the bus's pub/sub connection hears (it closes the circuit at once when that
connection comes back).
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import MaxConnectionsError, ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

log = logging.getLogger("chat_bff.redis")

# What a Redis that is down or hung looks like (redis-py's own, and the socket's).
NOT_ANSWERING = (RedisConnectionError, RedisTimeoutError, TimeoutError, OSError)


class RedisSkipped(RedisConnectionError):
    """Redis was not called: it failed moments ago (or another call is probing it)."""


class RedisOutage:
    """One per Redis: shared by the limiter and the bus of a process."""

    def __init__(
        self, retry_seconds: float, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._retry = retry_seconds
        self._clock = clock
        self._failed_at: float | None = None  # None: the last call was answered
        self._probing = False

    @property
    def open(self) -> bool:
        """Whether a call now would be skipped."""
        if self._failed_at is None or self._retry <= 0:
            return False
        return self._probing or self._clock() - self._failed_at < self._retry

    @asynccontextmanager
    async def call(self) -> AsyncIterator[None]:
        """Around one call to Redis: raises `RedisSkipped` (no call made) while open; a
        call that does not answer opens it, one answered closes it."""
        if self.open:
            raise RedisSkipped(f"Redis did not answer; skipped for {self._retry:g} s")
        probe = self._failed_at is not None
        self._probing = probe
        try:
            yield
        except ResponseError:
            if probe:  # an error reply is still a reply: Redis is up
                self.answered()
            raise
        except NOT_ANSWERING as exc:
            if not isinstance(exc, MaxConnectionsError):  # our own pool full: no verdict
                self.failed(type(exc).__name__)
                raise
            if probe:
                self._probing = False
            raise
        except BaseException:
            if probe:  # cancelled or refused here, not by Redis: no verdict, probe again
                self._probing = False
            raise
        if probe:
            self.answered()

    def answered(self) -> None:
        """Redis answered (here or elsewhere, e.g. the bus's listener heard from it)."""
        if self._failed_at is not None:
            log.info("Redis answers again")
        self._failed_at = None
        self._probing = False

    def failed(self, why: str) -> None:
        """Redis did not answer (here or in a call made outside `call`)."""
        if self._failed_at is None:
            log.warning(
                "Redis did not answer; skipping it for a while",
                extra={"error_type": why, "seconds": self._retry},
            )
        self._failed_at = self._clock()
        self._probing = False
