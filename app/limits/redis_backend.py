"""The Redis backend (`REDIS_URL`): the same primitives, shared by every instance.

Each primitive is one Lua script, so it is atomic on the server; time is the server's
(`TIME`), so instances with skewed clocks agree.

Connections: the client's pool holds at most `pool_size` of them (`REDIS_POOL_SIZE`), and
a gate of the same size (`ConnectionGate`) lets that many calls in at once; a call that
finds every connection in use waits up to `pool_timeout` (`REDIS_POOL_TIMEOUT_SECONDS`)
for one, then fails with `BackendBusy`, which the limiter answers with 503. Without the gate a flood
opens connections until the pool refuses, and a refusal that looked like "Redis is down"
let the whole flood through. Each command is tried once with a socket timeout
(`REDIS_TIMEOUT_SECONDS`): a Redis that is down or hangs is `BackendUnavailable` quickly,
and a timed-out rate script is not run twice. After such a failure the calls skip Redis for
`REDIS_RETRY_SECONDS` (`app.redis.outage`): `BackendUnavailable` at once, without
each request waiting out the timeout of a Redis that hangs.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Collection, Mapping
from contextlib import asynccontextmanager
from typing import Any, cast

from redis.asyncio import Redis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import MaxConnectionsError, RedisError

from app.limits.backends import BackendBusy, BackendUnavailable
from app.redis.outage import RedisOutage


class ConnectionGate:
    """At most `size` calls at once; a call that finds no room within `timeout` seconds
    gets `BackendBusy`."""

    def __init__(self, size: int, timeout: float) -> None:
        self._room = asyncio.Semaphore(size)
        self._timeout = timeout

    @asynccontextmanager
    async def turn(self) -> AsyncIterator[None]:
        try:
            async with asyncio.timeout(self._timeout):
                await self._room.acquire()
        except TimeoutError:
            raise BackendBusy("no Redis connection came free in time") from None
        try:
            yield
        finally:
            self._room.release()


_RATE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1e6
local limit = tonumber(ARGV[1])
local period = tonumber(ARGV[2])
local interval = period / limit
local tat = tonumber(redis.call('GET', KEYS[1]) or now)
if tat < now then tat = now end
local allow_at = tat + interval - period
if now < allow_at then return tostring(allow_at - now) end
redis.call('SET', KEYS[1], tostring(tat + interval), 'PX', math.ceil(period * 1000) + 1000)
return '0'
"""

_ACQUIRE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1e6
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local limit = tonumber(ARGV[2])
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) and redis.call('ZCARD', KEYS[1]) >= limit then
  return 0
end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[1])
-- The set expires with its last lease, never before (instances may differ in lease).
local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
redis.call('PEXPIREAT', KEYS[1], math.ceil(tonumber(last[2]) * 1000))
return 1
"""

_RENEW = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1e6
local ttl = tonumber(ARGV[1])
local at = 2
for k = 1, #KEYS do
  redis.call('ZREMRANGEBYSCORE', KEYS[k], '-inf', now)
  local n = tonumber(ARGV[at])
  for i = 1, n do
    redis.call('ZADD', KEYS[k], 'XX', now + ttl, ARGV[at + i])
  end
  at = at + n + 1
  local last = redis.call('ZRANGE', KEYS[k], -1, -1, 'WITHSCORES')
  if last[2] then redis.call('PEXPIREAT', KEYS[k], math.ceil(tonumber(last[2]) * 1000)) end
end
return 0
"""

_ADD = """
local v = redis.call('INCRBY', KEYS[1], ARGV[1])
if redis.call('PTTL', KEYS[1]) < 0 then
  redis.call('PEXPIRE', KEYS[1], math.ceil(tonumber(ARGV[2]) * 1000))
end
return v
"""


class RedisBackend:
    def __init__(
        self,
        client: Redis,
        *,
        namespace: str = "chatbff:limits:",
        pool_timeout: float = 1.0,
        outage: RedisOutage | None = None,
    ) -> None:
        self._redis = client
        self._ns = namespace
        self._outage = outage or RedisOutage(0.0)
        self._gate = ConnectionGate(client.connection_pool.max_connections, pool_timeout)
        self._rate = client.register_script(_RATE)
        self._acquire = client.register_script(_ACQUIRE)
        self._renew = client.register_script(_RENEW)
        self._add = client.register_script(_ADD)

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        pool_size: int = 50,
        pool_timeout: float = 1.0,
        timeout: float = 1.0,
        outage: RedisOutage | None = None,
    ) -> RedisBackend:
        client = Redis.from_url(
            url,
            max_connections=pool_size,
            socket_timeout=timeout,
            socket_connect_timeout=timeout,
            retry=Retry(NoBackoff(), 0),
        )
        return cls(client, pool_timeout=pool_timeout, outage=outage)

    @asynccontextmanager
    async def _connection(self) -> AsyncIterator[None]:
        """A turn on one of the pool's connections; errors mapped to ours. The pool's own
        refusal (something else used the client's connections) is busy too, not down. While
        Redis is skipped, no turn is waited for."""
        try:
            async with self._outage.call(), self._gate.turn():
                yield
        except MaxConnectionsError as exc:
            raise BackendBusy(type(exc).__name__) from exc
        except (RedisError, OSError) as exc:
            raise BackendUnavailable(type(exc).__name__) from exc

    async def rate(self, key: str, limit: int, period: float) -> float:
        async with self._connection():
            result: Any = await self._rate(keys=[self._ns + key], args=[limit, period])
        return float(result.decode() if isinstance(result, bytes) else result)

    async def acquire(self, key: str, member: str, limit: int, ttl: float) -> bool:
        async with self._connection():
            result: Any = await self._acquire(keys=[self._ns + key], args=[member, limit, ttl])
        return bool(int(result))

    async def renew(self, leases: Mapping[str, Collection[str]], ttl: float) -> None:
        keys: list[str] = []
        args: list[str | float] = [ttl]
        for key, members in leases.items():
            keys.append(self._ns + key)
            args += [len(members), *members]
        if keys:
            async with self._connection():
                await self._renew(keys=keys, args=args)

    async def release(self, key: str, member: str) -> None:
        async with self._connection():
            await cast(Any, self._redis.zrem(self._ns + key, member))

    async def add(self, key: str, amount: int, ttl: float) -> int:
        async with self._connection():
            result: Any = await self._add(keys=[self._ns + key], args=[amount, ttl])
        return int(result)

    async def get(self, key: str) -> int:
        async with self._connection():
            value: Any = await self._redis.get(self._ns + key)
        return int(value) if value is not None else 0

    async def aclose(self) -> None:
        await self._redis.aclose()
