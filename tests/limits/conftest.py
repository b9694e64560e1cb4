"""Stores for limit tests: the in-process one and a real Redis on 127.0.0.1.

redis_url   a reachable Redis (skipped when there is none, failed under CI)
store       parametrized "memory" | "redis": `store.new()` is a backend on the same
            counters each time, as a second process would open (Redis: its own client
            on one namespace of this test's own)
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass, field

import pytest
import redis
from redis.asyncio import Redis
from redis.exceptions import RedisError

from app.limits.backends import LimitBackend, MemoryBackend
from app.limits.redis_backend import RedisBackend
from tests.support.required import unavailable

REDIS_URL = os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


@pytest.fixture
def redis_url() -> str:
    return reachable_redis_url()


def reachable_redis_url() -> str:
    """The test Redis's URL; skips the test when it is unreachable (fails it under CI)."""
    client = redis.Redis.from_url(REDIS_URL)
    try:
        client.ping()
    except (RedisError, OSError) as exc:
        unavailable(f"Redis not reachable: {exc}")
    finally:
        client.close()
    return REDIS_URL


@dataclass
class Store:
    kind: str
    url: str = ""
    namespace: str = field(default_factory=lambda: f"test:{uuid.uuid4().hex}:")
    _memory: MemoryBackend = field(default_factory=MemoryBackend)

    def new(self) -> LimitBackend:
        if self.kind == "memory":
            return self._memory
        return RedisBackend(Redis.from_url(self.url), namespace=self.namespace)


@pytest.fixture(params=["memory", "redis"])
def store(request: pytest.FixtureRequest) -> Store:
    if request.param == "memory":
        return Store("memory")
    return Store("redis", request.getfixturevalue("redis_url"))
