"""The run manager's hooks as this deployment keeps them: limits, metrics, log context."""

from __future__ import annotations

from contextlib import AbstractContextManager

from app.domain.events import RunStatus, UsageInfo
from app.domain.identity import Caller
from app.limits.limiter import Limiter
from app.observability.logging import bind_run
from app.observability.metrics import Metrics


class ServiceRunHooks:
    def __init__(self, limits: Limiter, metrics: Metrics) -> None:
        self._limits = limits
        self._metrics = metrics

    async def admit(self, caller: Caller, run_id: str) -> None:
        await self._limits.check_tokens(caller)
        await self._limits.acquire_run(caller, run_id)

    async def abandon(self, caller: Caller, run_id: str) -> None:
        await self._limits.release_run(caller, run_id)

    def started(self, run_id: str) -> None:
        self._metrics.run_started()

    async def finished(
        self, caller: Caller, run_id: str, status: RunStatus, seconds: float, usage: UsageInfo
    ) -> None:
        self._metrics.run_finished(status, seconds)
        await self._limits.release_run(caller, run_id)
        await self._limits.add_tokens(caller, usage.input_tokens + usage.output_tokens)

    def bind(self, run_id: str) -> AbstractContextManager[None]:
        return bind_run(run_id)
