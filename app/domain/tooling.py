"""The vocabulary the agent loop and the tools share: who a run acts for, and what a
server tool call came to.

The agent calls tools through `app.agent.ports.ToolRuntime`; the tool runtime implements
it. Both speak these values, so neither imports the other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from app.domain.identity import Caller

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
