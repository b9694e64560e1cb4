"""What the loop needs from the outside world, as protocols.

`ToolRuntime` is implemented in `app.toolruntime` (registry, scope pinning, approvals,
proposals); `EventSink` by the run manager (the event log). Keeping them here keeps
the loop free of databases and HTTP.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from app.domain.events import RunEvent
from app.domain.models import ModelInfo
from app.domain.parts import ToolPart
from app.domain.stream import ToolSpec
from app.domain.tooling import Invoked, RunContext


class ToolRuntime(Protocol):
    def specs(self, ctx: RunContext) -> list[ToolSpec]:
        """Schemas of the server tools this caller's model may see."""
        ...

    def knows(self, name: str) -> bool:
        """Whether `name` is a server tool (otherwise it belongs to the client)."""
        ...

    async def invoke(self, part: ToolPart, ctx: RunContext) -> Invoked:
        """Pin scope args, validate, apply the policy, run with a timeout.

        Never raises for a tool's own failure: that is an error outcome for the model.
        """
        ...

    async def run_cancelled(self, owner_id: str, run_id: str) -> None:
        """A run was stopped: whatever it left waiting for a human no longer applies."""
        ...


class EventSink(Protocol):
    async def emit(self, event: RunEvent) -> None: ...


class ToolSelector(Protocol):
    async def select(
        self,
        text: str,
        specs: Sequence[ToolSpec],
        model: ModelInfo,
        keep: Sequence[str] = (),
    ) -> list[ToolSpec]:
        """The server tools this request needs, out of `specs`, and those in `keep` (the
        tools the conversation is already using); implemented by `app.routing`."""
        ...
