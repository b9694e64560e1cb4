"""What the run manager tells the rest of the service about a run's life.

Limits (concurrent runs, daily tokens), metrics and log context are cross-cutting; the
manager calls this protocol and stays ignorant of how each is kept.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from typing import Protocol

from app.domain.events import RunStatus, UsageInfo
from app.domain.identity import Caller


class RunHooks(Protocol):
    async def admit(self, caller: Caller, run_id: str) -> None:
        """Before a run starts; raises RateLimited (429) to refuse it."""
        ...

    async def abandon(self, caller: Caller, run_id: str) -> None:
        """An admitted run that never started (409, nothing due): give its slot back."""
        ...

    def started(self, run_id: str) -> None:
        """The run's task is about to run."""
        ...

    async def finished(
        self, caller: Caller, run_id: str, status: RunStatus, seconds: float, usage: UsageInfo
    ) -> None:
        """After a run admitted by `admit` ended, whatever the outcome."""
        ...

    def bind(self, run_id: str) -> AbstractContextManager[None]:
        """A context the run's task runs in (log lines carry the run id)."""
        ...


class NoHooks:
    async def admit(self, caller: Caller, run_id: str) -> None:
        return None

    async def abandon(self, caller: Caller, run_id: str) -> None:
        return None

    def started(self, run_id: str) -> None:
        return None

    async def finished(
        self, caller: Caller, run_id: str, status: RunStatus, seconds: float, usage: UsageInfo
    ) -> None:
        return None

    def bind(self, run_id: str) -> AbstractContextManager[None]:
        return nullcontext()
