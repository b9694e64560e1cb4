"""Run events: what a run appends to its event log and every wire encoder reads.

The names are the native SSE vocabulary. Every event carries `run_id`; the sequence
number is not part of the event but of its place in the log (`SequencedEvent.seq`), so it
is assigned once, before anything is sent, and is the SSE `id:`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from app.domain.messages import Message
from app.domain.parts import ToolPart

RunStatus = Literal[
    "running",
    "completed",
    "requires_action",
    "cancelled",
    "failed",
    "max_iterations",
    "interrupted",
]
FINAL_RUN_STATUSES: frozenset[str] = frozenset(
    {"completed", "requires_action", "cancelled", "failed", "max_iterations", "interrupted"}
)


class _Event(BaseModel):
    model_config = ConfigDict(extra="forbid")
    run_id: str = Field(description="The run this event belongs to.")


class UsageInfo(BaseModel):
    """Token usage of a run, including how many model calls it made."""

    input_tokens: int = Field(default=0, description="Prompt tokens over all model calls.")
    output_tokens: int = Field(default=0, description="Completion tokens over all model calls.")
    model_calls: int = Field(default=0, description="Model calls made in this run.")


class ContextInfo(BaseModel):
    tokens: int = Field(description="Estimated prompt tokens sent.")
    limit: int = Field(description="The model's context window.")
    trimmed_messages: int = Field(default=0, description="Oldest messages left out to fit.")
    truncated_input: bool = Field(default=False, description="A long user message was cut.")
    truncated_documents: list[str] = Field(
        default_factory=list,
        description="Names of attached documents whose text was cut to fit the context.",
    )


class RunStart(_Event):
    type: Literal["run_start"] = "run_start"
    model: str = Field(description="Catalogue id of the model answering.")
    message_id: str = Field(description="Id of the assistant message this run writes.")
    conversation_id: str | None = Field(default=None, description="Conversation, if any.")
    context: ContextInfo | None = Field(default=None, description="How history was fitted.")


class TextDeltaEvent(_Event):
    type: Literal["text_delta"] = "text_delta"
    message_id: str
    delta: str


class ThinkingDeltaEvent(_Event):
    type: Literal["thinking_delta"] = "thinking_delta"
    message_id: str
    delta: str


class ToolStart(_Event):
    type: Literal["tool_start"] = "tool_start"
    message_id: str
    part: ToolPart


class ToolArgsDelta(_Event):
    type: Literal["tool_args_delta"] = "tool_args_delta"
    message_id: str
    tool_call_id: str
    delta: str


class ConfirmRequired(_Event):
    """A human must act: approve a dangerous server tool, or answer a client tool card.

    `kind="approval"` carries the `approval_id` to decide through `/api/approvals`;
    `kind="client_tool"` waits for the browser's result through `tool-results`.
    """

    type: Literal["confirm_required"] = "confirm_required"
    kind: Literal["approval", "client_tool"] = "approval"
    message_id: str
    approval_id: str | None = Field(default=None, description="Set when kind is approval.")
    part: ToolPart
    summary: str = Field(description="Human-readable summary of what will happen.")
    expires_at: float | None = Field(default=None, description="Unix time the approval lapses.")


class ToolEnd(_Event):
    type: Literal["tool_end"] = "tool_end"
    message_id: str
    part: ToolPart
    mutates: bool = Field(default=False, description="True when a UI should refresh its data.")


class ToolError(_Event):
    type: Literal["tool_error"] = "tool_error"
    message_id: str
    part: ToolPart
    error: str = Field(description="What went wrong, safe to show.")


class MessageEnd(_Event):
    type: Literal["message_end"] = "message_end"
    message: Message


class RunEnd(_Event):
    type: Literal["run_end"] = "run_end"
    status: RunStatus
    usage: UsageInfo = Field(default_factory=UsageInfo)
    error: dict[str, Any] | None = Field(default=None, description="Set when status is failed.")


class ErrorEvent(_Event):
    type: Literal["error"] = "error"
    code: str
    message: str
    retryable: bool = False


RunEvent = Annotated[
    RunStart
    | TextDeltaEvent
    | ThinkingDeltaEvent
    | ToolStart
    | ToolArgsDelta
    | ConfirmRequired
    | ToolEnd
    | ToolError
    | MessageEnd
    | RunEnd
    | ErrorEvent,
    Field(discriminator="type"),
]
RUN_EVENT_ADAPTER: TypeAdapter[RunEvent] = TypeAdapter(RunEvent)


@dataclass(slots=True, eq=False)
class SequencedEvent:
    """An event at its place in a run's log; `seq` starts at 1 and increases.

    A plain dataclass, not a model: one is made per streamed token, and the event inside
    is already validated. Its JSON is made once, on first use, and shared by every reader
    that sends it (a long answer's `message_end` is one buffer, not one per reader).
    """

    seq: int
    event: RunEvent
    _json: bytes | None = field(default=None, repr=False)

    def json(self) -> bytes:
        """The event as compact JSON (cached)."""
        if self._json is None:
            self._json = self.event.__pydantic_serializer__.to_json(self.event)
        return self._json

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SequencedEvent):
            return NotImplemented
        return self.seq == other.seq and self.event == other.event
