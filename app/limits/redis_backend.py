"""The Redis backend (`REDIS_URL`): the same primitives, shared by every instance.

Each primitive is one Lua script, so it is atomic on the server; time is the server's
(`TIME`), so instances with skewed clocks agree.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, cast

from redis.asyncio import Redis
from redis.exceptions import RedisError

from app.limits.backends import BackendUnavailable


@asynccontextmanager
async def _mapped() -> AsyncIterator[None]:
    try:
        yield
    except (RedisError, OSError) as exc:
        raise BackendUnavailable(type(exc).__name__) from exc


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
redis.call('PEXPIRE', KEYS[1], math.ceil(tonumber(ARGV[3]) * 1000))
return 1
"""

_ADD = """
local v = redis.call('INCRBY', KEYS[1], ARGV[1])
if redis.call('PTTL', KEYS[1]) < 0 then
  redis.call('PEXPIRE', KEYS[1], math.ceil(tonumber(ARGV[2]) * 1000))
end
return v
"""


class RedisBackend:
    def __init__(self, client: Redis, *, namespace: str = "chatbff:limits:") -> None:
        self._redis = client
        self._ns = namespace
        self._rate = client.register_script(_RATE)
        self._acquire = client.register_script(_ACQUIRE)
        self._add = client.register_script(_ADD)

    @classmethod
    def from_url(cls, url: str) -> RedisBackend:
        return cls(Redis.from_url(url))

    async def rate(self, key: str, limit: int, period: float) -> float:
        async with _mapped():
            result: Any = await self._rate(keys=[self._ns + key], args=[limit, period])
        return float(result.decode() if isinstance(result, bytes) else result)

    async def acquire(self, key: str, member: str, limit: int, ttl: float) -> bool:
        async with _mapped():
            result: Any = await self._acquire(keys=[self._ns + key], args=[member, limit, ttl])
        return bool(int(result))

    async def release(self, key: str, member: str) -> None:
        async with _mapped():
            await cast(Any, self._redis.zrem(self._ns + key, member))

    async def add(self, key: str, amount: int, ttl: float) -> int:
        async with _mapped():
            result: Any = await self._add(keys=[self._ns + key], args=[amount, ttl])
        return int(result)

    async def get(self, key: str) -> int:
        async with _mapped():
            value: Any = await self._redis.get(self._ns + key)
        return int(value) if value is not None else 0

    async def aclose(self) -> None:
        await self._redis.aclose()
