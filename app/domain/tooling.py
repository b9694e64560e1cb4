"""The vocabulary the agent loop and the tools share: who a run acts for, where a tool
call happens, and what a server tool call came to.

The agent calls tools through `app.agent.ports.ToolRuntime`; the tool runtime implements
it. Both speak these values, so neither imports the other; the store keeps approvals and
proposals bound to a `CallSite` without knowing either.
"""

from __future__ import annotations

from collections.abc import Mapping
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
class CallSite:
    """One server tool call's place: who makes it, with which pinned scope, where.

    Built once per call (from the run, or from the stored approval or proposal that runs
    it later) and handed whole to the handler's context, the audit record and the store,
    so no path can mix up one call's run with another's conversation.
    """

    caller: Caller
    # The values the call's scope arguments were pinned to (see `app.tools.pinning`).
    scope: Mapping[str, str]
    conversation_id: str | None
    run_id: str
    tool_call_id: str
    model_id: str = ""


@dataclass(frozen=True)
class ToolOutcome:
    """A finished server tool call. `status="error"` results go back to the model."""

    status: Literal["success", "error"]
    result: Any
    mutates: bool = False
    error: str | None = None
    args: dict[str, Any] | None = None  # the arguments as run (after pinning)
    # The background job the call started (a long-running tool in a stateless turn: the
    # result is a receipt naming the job, which runs on outside the turn).
    job_id: str | None = None


@dataclass(frozen=True)
class ApprovalNeeded:
    """The call waits for a human: a pending approval was stored under `approval_id`."""

    approval_id: str
    summary: str
    expires_at: float | None
    args: dict[str, Any] | None = None


@dataclass(frozen=True)
class InputNeeded:
    """The call waits for the user's answer to a question the tool asked mid-call (an MCP
    elicitation): the question is stored under `elicitation_id` with what the tool needs to
    continue, so the answer may arrive at any instance."""

    elicitation_id: str
    message: str
    requested_schema: dict[str, Any]
    args: dict[str, Any] | None = None


@dataclass(frozen=True)
class BackgroundStarted:
    """The call runs outside the turn, as the durable background job `job_id`: the turn
    ends with its part `loading`, and its result continues the conversation in a new run."""

    job_id: str
    summary: str
    args: dict[str, Any] | None = None


# What invoking a server tool comes to.
Invoked = ToolOutcome | ApprovalNeeded | InputNeeded | BackgroundStarted
