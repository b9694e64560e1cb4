"""Counters behind the limits: in-process (one instance) or Redis (many instances).

Three primitives, each atomic on its backend:
- `rate(key, limit, period)`: GCRA (a smoothed token bucket: `limit` per `period`, bursts
  up to `limit`); returns 0 when allowed, else the seconds to wait.
- `acquire(key, member, limit, ttl)` / `renew(leases, ttl)` / `release(key, member)`: a
  set of leases (run ids) with a short TTL that the holder renews while the run lives, so
  a crashed instance's slots lapse within one lease instead of blocking a user.
- `add(key, amount, ttl)` / `get(key)`: a counter that expires (tokens per day).

Two failures, told apart because the limiter answers them differently:
`BackendUnavailable` (the store is down: let the request through) and `BackendBusy` (our
own connections to it are all in use: refuse, never let a flood through).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Mapping
from typing import Protocol


class BackendUnavailable(Exception):
    """The shared store did not answer; the limiter lets the request through."""


class BackendBusy(Exception):
    """Every connection to the shared store stayed in use for the whole wait; the limiter
    refuses the request (a flood must not turn the limits off)."""


class LimitBackend(Protocol):
    async def rate(self, key: str, limit: int, period: float) -> float: ...
    async def acquire(self, key: str, member: str, limit: int, ttl: float) -> bool: ...
    async def renew(self, leases: Mapping[str, Collection[str]], ttl: float) -> None: ...
    async def release(self, key: str, member: str) -> None: ...
    async def add(self, key: str, amount: int, ttl: float) -> int: ...
    async def get(self, key: str) -> int: ...
    async def aclose(self) -> None: ...


class MemoryBackend:
    """Single-process counters. Everything runs on the event loop without awaits in
    between, so each method is atomic."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._now = clock
        self._tat: dict[str, float] = {}
        self._leases: dict[str, dict[str, float]] = {}
        self._counters: dict[str, tuple[int, float]] = {}

    async def rate(self, key: str, limit: int, period: float) -> float:
        now = self._now()
        interval = period / limit
        tat = max(self._tat.get(key, now), now)
        allow_at = tat + interval - period
        if now < allow_at:
            return allow_at - now
        self._tat[key] = tat + interval
        if len(self._tat) > 100_000:
            self._tat = {k: v for k, v in self._tat.items() if v > now}
        return 0.0

    async def acquire(self, key: str, member: str, limit: int, ttl: float) -> bool:
        now = self._now()
        leases = {m: exp for m, exp in self._leases.get(key, {}).items() if exp > now}
        if member not in leases and len(leases) >= limit:
            self._leases[key] = leases
            return False
        leases[member] = now + ttl
        self._leases[key] = leases
        return True

    async def renew(self, leases: Mapping[str, Collection[str]], ttl: float) -> None:
        """Extend the leases still held; a lapsed or released one stays gone."""
        now = self._now()
        for key, members in leases.items():
            held = self._leases.get(key, {})
            for member in members:
                if held.get(member, now) > now:
                    held[member] = now + ttl

    async def release(self, key: str, member: str) -> None:
        leases = self._leases.get(key)
        if leases is not None:
            leases.pop(member, None)
            if not leases:
                del self._leases[key]

    async def add(self, key: str, amount: int, ttl: float) -> int:
        now = self._now()
        value, expires = self._counters.get(key, (0, now + ttl))
        if expires <= now:
            value, expires = 0, now + ttl
        value += amount
        self._counters[key] = (value, expires)
        return value

    async def get(self, key: str) -> int:
        value, expires = self._counters.get(key, (0, 0.0))
        return value if expires > self._now() else 0

    async def aclose(self) -> None:
        return None
