"""What the run manager tells the rest of the service about a run's life.

Limits (concurrent runs, daily tokens), metrics and log context are cross-cutting; the
manager calls this protocol and stays ignorant of how each is kept. Each concern
implements the hooks it cares about in its own room (`app.limits.run_hooks`,
`app.observability.run_hooks`); the container joins them with `AllHooks`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, ExitStack, contextmanager, nullcontext
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

    async def recovered(self, owner_id: str, run_id: str) -> None:
        """Crash recovery closed a run a dead process left running: free what it held."""
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

    async def recovered(self, owner_id: str, run_id: str) -> None:
        return None


class AllHooks:
    """Several hooks as one, called in order (a refusal in `admit` stops the rest)."""

    def __init__(self, hooks: Sequence[RunHooks]) -> None:
        self._hooks = list(hooks)

    async def admit(self, caller: Caller, run_id: str) -> None:
        for hook in self._hooks:
            await hook.admit(caller, run_id)

    async def abandon(self, caller: Caller, run_id: str) -> None:
        for hook in self._hooks:
            await hook.abandon(caller, run_id)

    def started(self, run_id: str) -> None:
        for hook in self._hooks:
            hook.started(run_id)

    async def finished(
        self, caller: Caller, run_id: str, status: RunStatus, seconds: float, usage: UsageInfo
    ) -> None:
        for hook in self._hooks:
            await hook.finished(caller, run_id, status, seconds, usage)

    async def recovered(self, owner_id: str, run_id: str) -> None:
        for hook in self._hooks:
            await hook.recovered(owner_id, run_id)

    @contextmanager
    def bind(self, run_id: str) -> Iterator[None]:
        with ExitStack() as stack:
            for hook in self._hooks:
                stack.enter_context(hook.bind(run_id))
            yield
