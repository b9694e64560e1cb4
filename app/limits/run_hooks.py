"""Run hooks of the limits: a run holds one of its caller's concurrent-run slots from
admission to its end, and its tokens count against the caller's daily budget. A run that
crash recovery closed (its process died) gives its slot back at once."""

from __future__ import annotations

from app.domain.events import RunStatus, UsageInfo
from app.domain.identity import Caller
from app.limits.limiter import Limiter
from app.runs.hooks import NoHooks


class LimitHooks(NoHooks):
    def __init__(self, limits: Limiter) -> None:
        self._limits = limits

    async def admit(self, caller: Caller, run_id: str) -> None:
        await self._limits.check_tokens(caller)
        await self._limits.acquire_run(caller, run_id)

    async def abandon(self, caller: Caller, run_id: str) -> None:
        await self._limits.release_run(caller, run_id)

    async def finished(
        self, caller: Caller, run_id: str, status: RunStatus, seconds: float, usage: UsageInfo
    ) -> None:
        await self._limits.release_run(caller, run_id)
        await self._limits.add_tokens(caller, usage.input_tokens + usage.output_tokens)

    async def recovered(self, owner_id: str, run_id: str) -> None:
        await self._limits.release_slot(owner_id, run_id)
