"""The limiter: what routes and the run manager call.

    await limiter.check_request(caller)          # every authenticated request (deps)
    async with limiter.run_slot(caller, run_id):  # around a run; 429 when too many
        ...
    await limiter.check_tokens(caller)           # before a model call; 429 when spent
    await limiter.add_tokens(caller, n)          # after a model call, with its usage
    release = limiter.open_stream(caller)         # a reader's stream; 429 when too many

`open_stream` counts in the process, whatever the backend: what an open stream holds (a
connection, its memory, a task) is this process's, and a stream that outlives its
process cannot hold a count anywhere.

`acquire_run` / `release_run` are the same as `run_slot` for code where a context manager
does not fit (the run task releases in its `finally`); `release_slot` frees the slot of a
run another process held (crash recovery closed it).

A run's slot is a lease of `run_lease_seconds` that this limiter renews every third of it
while the run lives here. A process that dies stops renewing, so its slots lapse within
one lease instead of holding the user at 429 for the length of a run.

When the shared store (Redis) fails, the answer depends on how it failed:

    store                      checks (request, run, tokens)   bookkeeping (release, usage)
    answers                    enforced                        done
    down / times out           let through                     skipped
    every connection in use    503 limiter_busy + Retry-After  skipped, logged as a spell

While it is down (or refuses the password, or loads its data), the requests let through
and the updates skipped are logged as a spell (`StoreOutageLog`): a warning when it starts,
a reminder at most once a minute, a line when the store answers again. Updates skipped
because every connection was in use are a spell of their own, told the same way.

Down is let through because an outage of the limiter should not be an outage of the
service; busy is refused because it is what a flood looks like, and letting a flood
through would turn the limits off exactly when they matter. Refusals raise `RateLimited`
with `retry_after`, which the error handler turns into 429 (or 503 for busy) +
`Retry-After` and the standard error body.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import TypeVar

from app.domain.errors import RateLimited
from app.domain.identity import Caller
from app.limits.backends import BackendBusy, BackendUnavailable, LimitBackend
from app.limits.policy import LimitPolicy
from app.limits.store_outage_log import BUSY, StoreOutageLog
from app.observability.metrics import Metrics

T = TypeVar("T")

_MINUTE = 60.0
_DAY = 86_400.0
BUSY_RETRY_AFTER = 1.0


class LimiterBusy(RateLimited):
    """The limits could not be checked because the limiter's own connections are all in
    use: 503, retryable, not the caller's fault (so not a 429)."""

    status = 503
    code = "limiter_busy"


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
        run_lease_seconds: float = 15.0,
        run_retry_after: float = 5.0,
        outage_log: StoreOutageLog | None = None,
        busy_log: StoreOutageLog | None = None,
    ) -> None:
        self._policy = policy
        self._backend = backend
        self._metrics = metrics
        self._run_lease = run_lease_seconds
        self._run_retry_after = run_retry_after
        self._held: dict[str, str] = {}  # run id -> its slot's key, for runs living here
        self._renewer: asyncio.Task[None] | None = None
        self._streams: dict[str, int] = {}  # user id -> event streams open here
        self._outage_log = outage_log or StoreOutageLog()
        self._busy_log = busy_log or StoreOutageLog(words=BUSY)

    async def _check(self, op: Awaitable[T], fallback: T) -> T:
        """A backend call that decides a request: open when down, closed when busy."""
        try:
            result = await op
        except BackendUnavailable as exc:
            self._outage_log.failed(str(exc), let_through=True)
            return fallback
        except BackendBusy:
            self._metrics.rate_limited("limiter_busy")
            raise LimiterBusy(
                "The service is busy checking limits; retry shortly.",
                retry_after=BUSY_RETRY_AFTER,
                limit="limiter_busy",
            ) from None
        self._answered()
        return result

    async def _keep(self, op: Awaitable[None], what: str) -> None:
        """A backend call that only keeps books: never fails the caller."""
        try:
            await op
        except BackendUnavailable as exc:
            self._outage_log.failed(str(exc), let_through=False)
        except BackendBusy as exc:
            self._busy_log.failed(f"{what}: {type(exc).__name__}", let_through=False)
        else:
            self._answered()

    def _answered(self) -> None:
        """The store took a call: a spell of it being away or full, if any, is over."""
        self._outage_log.answered()
        self._busy_log.answered()

    def _refuse(self, limit: str, message: str, retry_after: float) -> RateLimited:
        self._metrics.rate_limited(limit)
        return RateLimited(message, retry_after=max(1.0, retry_after), limit=limit)

    async def check_request(self, caller: Caller) -> None:
        limit = self._policy.for_caller(caller).requests_per_minute
        if limit <= 0:
            return
        wait = await self._check(self._backend.rate(f"rpm:{caller.user_id}", limit, _MINUTE), 0.0)
        if wait > 0:
            raise self._refuse(
                "requests_per_minute",
                f"Too many requests: the limit is {limit} per minute.",
                wait,
            )

    # -- concurrent runs -----------------------------------------------------------------

    async def acquire_run(self, caller: Caller, run_id: str) -> None:
        limit = self._policy.for_caller(caller).concurrent_runs
        if limit <= 0:
            return
        key = f"runs:{caller.user_id}"
        ok = await self._check(self._backend.acquire(key, run_id, limit, self._run_lease), True)
        if not ok:
            raise self._refuse(
                "concurrent_runs",
                f"Too many runs at once: the limit is {limit}.",
                self._run_retry_after,
            )
        self._held[run_id] = key
        self._renew_while_held()

    async def release_run(self, caller: Caller, run_id: str) -> None:
        """Give back the slot this process took for the run; a run that took none (its
        caller has no run limit, or it was refused) costs no call on the store."""
        if run_id in self._held:
            await self.release_slot(caller.user_id, run_id)

    async def release_slot(self, user_id: str, run_id: str) -> None:
        """Free a run's slot, held here or by a process that died (recovery closed it)."""
        self._held.pop(run_id, None)
        await self._keep(self._backend.release(f"runs:{user_id}", run_id), "release")

    @asynccontextmanager
    async def run_slot(self, caller: Caller, run_id: str) -> AsyncIterator[None]:
        await self.acquire_run(caller, run_id)
        try:
            yield
        finally:
            await self.release_run(caller, run_id)

    def _renew_while_held(self) -> None:
        if self._renewer is None or self._renewer.done():
            # A context of its own: the task outlives the request that started it, whose
            # log context (request id) must not stick to the renewals.
            self._renewer = asyncio.get_running_loop().create_task(
                self._renew_loop(), name="run slot leases", context=contextvars.Context()
            )

    async def _renew_loop(self) -> None:
        """Renew the slots of runs living here every third of a lease; ends when none is
        held (the next admitted run starts it again)."""
        while self._held:
            await asyncio.sleep(self._run_lease / 3)
            leases: dict[str, list[str]] = {}
            for run_id, key in self._held.items():
                leases.setdefault(key, []).append(run_id)
            if leases:
                await self._keep(self._backend.renew(leases, self._run_lease), "renew")

    # -- open event streams --------------------------------------------------------------

    def open_stream(self, caller: Caller) -> Callable[[], None] | None:
        """Count one more open event stream of the caller (429 past the limit); the
        answer gives it back, once, however often it is called (None: nothing counted)."""
        limit = self._policy.for_caller(caller).open_streams
        if limit <= 0:
            return None
        user = caller.user_id
        held = self._streams.get(user, 0)
        if held >= limit:
            raise self._refuse(
                "open_streams",
                f"Too many event streams open at once: the limit is {limit}; "
                "close one (another tab's) first.",
                self._run_retry_after,
            )
        self._streams[user] = held + 1
        released = False

        def release() -> None:
            nonlocal released
            if released:
                return
            released = True
            left = self._streams.get(user, 1) - 1
            if left > 0:
                self._streams[user] = left
            else:
                self._streams.pop(user, None)

        return release

    # -- tokens per day ------------------------------------------------------------------

    def _day_key(self, caller: Caller) -> str:
        return f"tokens:{caller.user_id}:{datetime.now(UTC):%Y%m%d}"

    async def check_tokens(self, caller: Caller) -> None:
        limit = self._policy.for_caller(caller).tokens_per_day
        if limit <= 0:
            return
        used = await self._check(self._backend.get(self._day_key(caller)), 0)
        if used >= limit:
            raise self._refuse(
                "tokens_per_day",
                f"Daily token budget spent ({limit} tokens); it resets at 00:00 UTC.",
                _seconds_to_utc_midnight(),
            )

    async def add_tokens(self, caller: Caller, tokens: int) -> None:
        if tokens <= 0 or self._policy.for_caller(caller).tokens_per_day <= 0:
            return

        async def add() -> None:
            await self._backend.add(self._day_key(caller), tokens, _DAY + 3600)

        await self._keep(add(), "tokens")

    async def aclose(self) -> None:
        """Stop renewing (slots of runs still here lapse within a lease) and disconnect."""
        if self._renewer is not None:
            self._renewer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._renewer
        await self._backend.aclose()
