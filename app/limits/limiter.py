"""The limiter: what routes and the run manager call.

    await limiter.check_request(caller)          # every authenticated request (deps)
    async with limiter.run_slot(caller, run_id):  # around a run; 429 when too many
        ...
    await limiter.check_tokens(caller)           # before a model call; 429 when spent
    await limiter.add_tokens(caller, n)          # after a model call, with its usage

`acquire_run` / `release_run` are the same as `run_slot` for code where a context manager
does not fit (the run task releases in its `finally`). Refusals raise `RateLimited` with
`retry_after`, which the error handler turns into 429 + `Retry-After` and the standard
error body. If the shared store (Redis) is down, requests pass and a warning is logged:
an outage of the limiter should not be an outage of the service.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import TypeVar

from app.domain.errors import RateLimited
from app.domain.identity import Caller
from app.limits.backends import BackendUnavailable, LimitBackend
from app.limits.policy import LimitPolicy
from app.observability.metrics import Metrics

log = logging.getLogger("chat_bff.limits")
T = TypeVar("T")

_MINUTE = 60.0
_DAY = 86_400.0


def _seconds_to_utc_midnight(now: datetime | None = None) -> float:
    now = now or datetime.now(UTC)
    tomorrow = (now + timedelta(days=1)).replace(hour=0, minute=0, second=0, microsecond=0)
    return (tomorrow - now).total_seconds()


class Limiter:
    def __init__(
        self,
        policy: LimitPolicy,
        backend: LimitBackend,
        metrics: Metrics,
        *,
        run_lease_seconds: float = 3600.0,
        run_retry_after: float = 5.0,
    ) -> None:
        self._policy = policy
        self._backend = backend
        self._metrics = metrics
        self._run_lease = run_lease_seconds
        self._run_retry_after = run_retry_after

    async def _call(self, op: Awaitable[T], fallback: T) -> T:
        try:
            return await op
        except BackendUnavailable as exc:
            log.warning(
                "limit store unavailable; letting the request through",
                extra={
                    "error_type": str(exc),
                },
            )
            return fallback

    def _refuse(self, limit: str, message: str, retry_after: float) -> RateLimited:
        self._metrics.rate_limited(limit)
        return RateLimited(message, retry_after=max(1.0, retry_after), limit=limit)

    async def check_request(self, caller: Caller) -> None:
        limit = self._policy.for_caller(caller).requests_per_minute
        if limit <= 0:
            return
        wait = await self._call(self._backend.rate(f"rpm:{caller.user_id}", limit, _MINUTE), 0.0)
        if wait > 0:
            raise self._refuse(
                "requests_per_minute",
                f"Too many requests: the limit is {limit} per minute.",
                wait,
            )

    async def acquire_run(self, caller: Caller, run_id: str) -> None:
        limit = self._policy.for_caller(caller).concurrent_runs
        if limit <= 0:
            return
        ok = await self._call(
            self._backend.acquire(f"runs:{caller.user_id}", run_id, limit, self._run_lease), True
        )
        if not ok:
            raise self._refuse(
                "concurrent_runs",
                f"Too many runs at once: the limit is {limit}.",
                self._run_retry_after,
            )

    async def release_run(self, caller: Caller, run_id: str) -> None:
        await self._call(self._backend.release(f"runs:{caller.user_id}", run_id), None)

    @asynccontextmanager
    async def run_slot(self, caller: Caller, run_id: str) -> AsyncIterator[None]:
        await self.acquire_run(caller, run_id)
        try:
            yield
        finally:
            await self.release_run(caller, run_id)

    def _day_key(self, caller: Caller) -> str:
        return f"tokens:{caller.user_id}:{datetime.now(UTC):%Y%m%d}"

    async def check_tokens(self, caller: Caller) -> None:
        limit = self._policy.for_caller(caller).tokens_per_day
        if limit <= 0:
            return
        used = await self._call(self._backend.get(self._day_key(caller)), 0)
        if used >= limit:
            raise self._refuse(
                "tokens_per_day",
                f"Daily token budget spent ({limit} tokens); it resets at 00:00 UTC.",
                _seconds_to_utc_midnight(),
            )

    async def add_tokens(self, caller: Caller, tokens: int) -> None:
        if tokens <= 0 or self._policy.for_caller(caller).tokens_per_day <= 0:
            return
        await self._call(self._backend.add(self._day_key(caller), tokens, _DAY + 3600), 0)

    async def aclose(self) -> None:
        await self._backend.aclose()
