"""What the loop needs from the outside world, as protocols.

`ToolRuntime` is implemented in `app.tools` (registry, scope pinning, approvals,
proposals); `EventSink` by the run manager (the event log). Keeping them here keeps
the loop free of databases and HTTP.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from app.domain.events import RunEvent
from app.domain.identity import Caller
from app.domain.parts import ToolPart
from app.domain.stream import ToolSpec

ConversationMode = Literal["auto", "propose"]


@dataclass(frozen=True)
class RunContext:
    """Who the run acts for and which scope its tools are pinned to."""

    caller: Caller
    run_id: str
    conversation_id: str | None
    mode: ConversationMode = "auto"
    # Values that overwrite scope arguments (session_id, conversation_id, workspace_id,
    # user_id, ...) before a tool validates or runs, whatever the model sent.
    scope: dict[str, str] = field(default_factory=dict)
    model_id: str = ""


@dataclass(frozen=True)
class ToolOutcome:
    """A finished server tool call. `status="error"` results go back to the model."""

    status: Literal["success", "error"]
    result: Any
    mutates: bool = False
    error: str | None = None
    args: dict[str, Any] | None = None  # the arguments as run (after pinning)


@dataclass(frozen=True)
class ApprovalNeeded:
    """The call waits for a human: a pending approval was stored under `approval_id`."""

    approval_id: str
    summary: str
    expires_at: float | None
    args: dict[str, Any] | None = None


class ToolRuntime(Protocol):
    def specs(self, ctx: RunContext) -> list[ToolSpec]:
        """Schemas of the server tools this caller's model may see."""
        ...

    def knows(self, name: str) -> bool:
        """Whether `name` is a server tool (otherwise it belongs to the client)."""
        ...

    async def invoke(self, part: ToolPart, ctx: RunContext) -> ToolOutcome | ApprovalNeeded:
        """Pin scope args, validate, apply the policy, run with a timeout.

        Never raises for a tool's own failure: that is an error outcome for the model.
        """
        ...

    async def run_cancelled(self, owner_id: str, run_id: str) -> None:
        """A run was stopped: whatever it left waiting for a human no longer applies."""
        ...


class EventSink(Protocol):
    async def emit(self, event: RunEvent) -> None: ...


class NoTools:
    """A runtime with no server tools (tests, or a deployment that registers none)."""

    def specs(self, ctx: RunContext) -> list[ToolSpec]:
        return []

    def knows(self, name: str) -> bool:
        return False

    async def invoke(self, part: ToolPart, ctx: RunContext) -> ToolOutcome | ApprovalNeeded:
        raise AssertionError(f"no server tool named {part.data.toolName!r}")

    async def run_cancelled(self, owner_id: str, run_id: str) -> None:
        return None
