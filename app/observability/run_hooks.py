"""Run hooks of observability: the active-runs gauge, run durations, log context."""

from __future__ import annotations

from contextlib import AbstractContextManager

from app.domain.events import RunStatus, UsageInfo
from app.domain.identity import Caller
from app.observability.logging import bind_run
from app.observability.metrics import Metrics
from app.runs.hooks import NoHooks


class ObservabilityHooks(NoHooks):
    def __init__(self, metrics: Metrics) -> None:
        self._metrics = metrics

    def started(self, run_id: str) -> None:
        self._metrics.run_started()

    async def finished(
        self, caller: Caller, run_id: str, status: RunStatus, seconds: float, usage: UsageInfo
    ) -> None:
        self._metrics.run_finished(status, seconds)

    def bind(self, run_id: str) -> AbstractContextManager[None]:
        return bind_run(run_id)
