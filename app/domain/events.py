"""Run events: what a run appends to its event log and every wire encoder reads.

The names are the native SSE vocabulary. Every event carries `run_id`; the sequence
number is not part of the event but of its place in the log (`SequencedEvent.seq`), so it
is assigned once, before anything is sent, and is the SSE `id:`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from app.domain.messages import Message
from app.domain.parts import ToolPart
from app.domain.usage import CallUsage

RunStatus = Literal[
    "running",
    "completed",
    "requires_action",
    "cancelled",
    "failed",
    "max_iterations",
    "interrupted",
    "budget_exceeded",
]
FINAL_RUN_STATUSES: frozenset[str] = frozenset(get_args(RunStatus)) - {"running"}

_new = object.__new__
_set = object.__setattr__


class _Event(BaseModel):
    # Every field is on the wire (defaults included), so the schema says they are required:
    # a generated client then types `type` as a literal it can switch on, not an optional.
    model_config = ConfigDict(extra="forbid", json_schema_serialization_defaults_required=True)
    run_id: str = Field(description="The run this event belongs to.")


class UsageInfo(BaseModel):
    """Token usage of a run, including how many model calls it made."""

    input_tokens: int = Field(
        default=0, description="Prompt tokens over all model calls (cached ones included)."
    )
    output_tokens: int = Field(default=0, description="Completion tokens over all model calls.")
    model_calls: int = Field(default=0, description="Model calls made in this run.")
    cached_tokens: int = Field(
        default=0, description="Prompt tokens the provider served from its cache."
    )
    cost: float | None = Field(
        default=None,
        description="What the tokens cost in the catalogue's currency (USD unless the "
        "deployment prices otherwise); null when the model has no price.",
    )
    estimated: bool = Field(
        default=False,
        description="True when a provider reported no usage for some call and its tokens "
        "were counted here instead.",
    )

    def add(self, call: CallUsage) -> None:
        """Count one model call's usage into the run's."""
        self.input_tokens += call.input_tokens
        self.output_tokens += call.output_tokens
        self.cached_tokens += call.cached_tokens
        self.estimated = self.estimated or call.estimated
        if call.cost is not None:
            self.cost = round((self.cost or 0.0) + call.cost, 9)


class ContextInfo(BaseModel):
    """How the conversation's history was fitted into the model's context window."""

    tokens: int = Field(description="Estimated prompt tokens sent.")
    limit: int = Field(description="The model's context window.")
    trimmed_messages: int = Field(default=0, description="Oldest messages left out to fit.")
    truncated_input: bool = Field(default=False, description="A long user message was cut.")
    truncated_documents: list[str] = Field(
        default_factory=list,
        description="Names of attached documents whose text was cut to fit the context.",
    )


class RunStart(_Event):
    """The first event of a run: which model answers and which message it writes."""

    type: Literal["run_start"] = Field(default="run_start", description="The event name.")
    model: str = Field(description="Catalogue id of the model answering.")
    message_id: str = Field(description="Id of the assistant message this run writes.")
    conversation_id: str | None = Field(default=None, description="Conversation, if any.")
    context: ContextInfo | None = Field(default=None, description="How history was fitted.")


class TextDeltaEvent(_Event):
    """A piece of the answer's text, to append to the message's current text part."""

    type: Literal["text_delta"] = Field(default="text_delta", description="The event name.")
    message_id: str = Field(description="The assistant message being written.")
    delta: str = Field(description="Text to append.")

    @classmethod
    def of(cls, run_id: str, message_id: str, delta: str) -> TextDeltaEvent:
        """The event for a token the agent relays, without validating it again: one is
        made per streamed token from strings that are valid already, and validation was
        a tenth of the service's CPU per token. What `model_construct` does, for three
        known fields (it walks the model's fields per call); equal to the validated one.
        """
        event = _new(cls)
        _set(
            event,
            "__dict__",
            {"run_id": run_id, "type": "text_delta", "message_id": message_id, "delta": delta},
        )
        _set(event, "__pydantic_fields_set__", {"run_id", "message_id", "delta"})
        _set(event, "__pydantic_extra__", None)
        _set(event, "__pydantic_private__", None)
        return event


class ThinkingDeltaEvent(_Event):
    """A piece of the model's visible reasoning, to append to its thinking part."""

    type: Literal["thinking_delta"] = Field(default="thinking_delta", description="The event name.")
    message_id: str = Field(description="The assistant message being written.")
    delta: str = Field(description="Reasoning text to append.")


class ToolStart(_Event):
    """The model began a tool call: a new tool part (upsert it by `part.id`)."""

    type: Literal["tool_start"] = Field(default="tool_start", description="The event name.")
    message_id: str = Field(description="The assistant message being written.")
    part: ToolPart = Field(description="The tool part as it stands now.")


class ToolArgsDelta(_Event):
    """A piece of a tool call's JSON arguments as the model streams them."""

    type: Literal["tool_args_delta"] = Field(
        default="tool_args_delta", description="The event name."
    )
    message_id: str = Field(description="The assistant message being written.")
    tool_call_id: str = Field(description="The tool part (`part.id`) the arguments belong to.")
    delta: str = Field(description="Raw JSON text to append to the arguments.")


class ConfirmRequired(_Event):
    """A human must act: approve a dangerous server tool, or answer a client tool card.

    `kind="approval"` carries the `approval_id` to decide through `/api/approvals`;
    `kind="client_tool"` waits for the browser's result through `tool-results`;
    `kind="input"`: a server tool asks the user a question (`part.data.elicitation`),
    answered through `POST /api/conversations/{id}/submissions/{toolCallId}`.
    """

    type: Literal["confirm_required"] = Field(
        default="confirm_required", description="The event name."
    )
    kind: Literal["approval", "client_tool", "input"] = Field(
        default="approval",
        description="`approval`: decide it; `client_tool`: post a result; `input`: answer "
        "the tool's question (a submission).",
    )
    message_id: str = Field(description="The assistant message being written.")
    approval_id: str | None = Field(default=None, description="Set when kind is approval.")
    part: ToolPart = Field(description="The tool part awaiting action.")
    summary: str = Field(description="Human-readable summary of what will happen.")
    expires_at: float | None = Field(default=None, description="Unix time the approval lapses.")


class ToolEnd(_Event):
    """A tool call finished (or its arguments are complete): the updated tool part."""

    type: Literal["tool_end"] = Field(default="tool_end", description="The event name.")
    message_id: str = Field(description="The assistant message being written.")
    part: ToolPart = Field(description="The tool part as it stands now.")
    mutates: bool = Field(default=False, description="True when a UI should refresh its data.")


class ToolError(_Event):
    """A tool call failed; the error also went back to the model, which may recover."""

    type: Literal["tool_error"] = Field(default="tool_error", description="The event name.")
    message_id: str = Field(description="The assistant message being written.")
    part: ToolPart = Field(description="The tool part, in status `error`.")
    error: str = Field(description="What went wrong, safe to show.")


PartUpdateCause = Literal[
    "approval_approved",
    "approval_rejected",
    "approval_expired",
    "proposal_applied",
    "proposal_rejected",
    "proposal_undone",
    "input_answered",
    "background_started",
    "background_finished",
]


class PartUpdate(_Event):
    """A tool part changed outside the model's stream: a human decided its approval (or it
    expired), its proposal batch was applied, rejected or undone, or its background job
    started (this run's own message) or finished (an earlier message). Upsert it by
    `part.id` in the message `message_id`; the stored message says the same once its run
    has ended."""

    type: Literal["part_update"] = Field(default="part_update", description="The event name.")
    message_id: str = Field(description="The message holding the part (not this run's own).")
    part: ToolPart = Field(description="The tool part as it stands now.")
    cause: PartUpdateCause = Field(description="What changed it.")


@dataclass(frozen=True)
class PartChange:
    """A part an earlier message's decision changed, for a run to announce (`PartUpdate`)."""

    message_id: str
    part: ToolPart
    cause: PartUpdateCause


class StepReset(_Event):
    """The model call streaming into this message failed after its first byte and
    `model` answers instead: drop everything this call streamed (text, thinking, tool
    calls) by replacing your copy of the message with `message`, then keep applying the
    events that follow. Sent only when the deployment allows failover after the first
    byte; the stored message holds only the replacement's answer."""

    type: Literal["step_reset"] = Field(default="step_reset", description="The event name.")
    message_id: str = Field(description="The assistant message being written.")
    message: Message = Field(description="The message without the failed call's parts.")
    model: str = Field(description="Catalogue id of the model answering from here on.")
    failed_model: str = Field(description="Catalogue id of the model whose stream failed.")
    code: str = Field(description="Why it failed, e.g. `provider_unavailable`.")


class MessageEnd(_Event):
    """The whole assistant message as stored, typed parts and all."""

    type: Literal["message_end"] = Field(default="message_end", description="The event name.")
    message: Message = Field(description="The assistant message.")


class RunEnd(_Event):
    """The last event of a run: how it ended and what it used."""

    type: Literal["run_end"] = Field(default="run_end", description="The event name.")
    status: RunStatus = Field(description="How the run ended.")
    usage: UsageInfo = Field(default_factory=UsageInfo, description="Tokens and model calls.")
    error: dict[str, Any] | None = Field(default=None, description="Set when status is failed.")


def _resume_url_is_optional(schema: dict[str, Any]) -> None:
    required = schema.get("required")
    if isinstance(required, list) and "resume_url" in required:
        required.remove("resume_url")


class ErrorEvent(_Event):
    """Something went wrong; `retryable` says whether sending again may work.

    `resume_url` (only present when set) is where a reader cut off by a restarting
    instance continues, with its Last-Event-ID."""

    model_config = ConfigDict(json_schema_extra=_resume_url_is_optional)

    type: Literal["error"] = Field(default="error", description="The event name.")
    code: str = Field(description="Stable machine-readable code, e.g. `shutting_down`.")
    message: str = Field(description="Human-readable explanation, safe to show.")
    retryable: bool = Field(default=False, description="True when trying again may work.")
    resume_url: str | None = Field(
        default=None,
        exclude_if=lambda value: value is None,
        description="Where to resume this run's events (sent only when set).",
    )


RunEvent = Annotated[
    RunStart
    | TextDeltaEvent
    | ThinkingDeltaEvent
    | ToolStart
    | ToolArgsDelta
    | ConfirmRequired
    | ToolEnd
    | ToolError
    | PartUpdate
    | StepReset
    | MessageEnd
    | RunEnd
    | ErrorEvent,
    Field(discriminator="type"),
]
RUN_EVENT_ADAPTER: TypeAdapter[RunEvent] = TypeAdapter(RunEvent)


class SequencedEvent:
    """An event at its place in a run's log; `seq` starts at 1 and increases.

    A plain slotted class, not a model: one is made per streamed token, and the event
    inside is already validated. Its JSON is made once, on first use, and shared by every
    reader that sends it (a long answer's `message_end` is one buffer, not one per reader).

    What the log stores is that JSON, as streamed: an event read back from the database
    (`stored`) carries those bytes and its type, so a replay sends exactly what the live
    stream sent and nothing parses it; the event itself is parsed only when something
    needs its fields (another wire's encoder, rebuilding a dead run's message).
    """

    __slots__ = ("_event", "_json", "seq", "type")

    def __init__(self, seq: int, event: RunEvent, *, encoded: bytes | None = None) -> None:
        self.seq = seq
        self.type: str = event.type
        self._event: RunEvent | None = event
        self._json = encoded

    @classmethod
    def stored(cls, seq: int, type_: str, encoded: bytes) -> SequencedEvent:
        """An event as the log stored it: its type and its JSON, parsed on first use."""
        item = cls.__new__(cls)
        item.seq = seq
        item.type = type_
        item._event = None
        item._json = encoded
        return item

    @property
    def event(self) -> RunEvent:
        if self._event is None:
            assert self._json is not None
            self._event = RUN_EVENT_ADAPTER.validate_json(self._json)
        return self._event

    def json(self) -> bytes:
        """The event as compact JSON (cached; as stored for an event read back)."""
        if self._json is None:
            event = self.event
            self._json = event.__pydantic_serializer__.to_json(event)
        return self._json

    @property
    def parsed(self) -> bool:
        """Whether the event's fields are held (not only its JSON)."""
        return self._event is not None

    def keep_json_only(self) -> None:
        """Hold the event as its JSON alone, as one read back from the database: what a
        finished run's log keeps for late readers (the parsed event is about twice the
        JSON's memory). A reader that needs the fields parses them again."""
        self.json()
        self._event = None

    @staticmethod
    def jsons(items: list[SequencedEvent]) -> list[bytes]:
        """Each event's `json()`, in order. Events of a run have theirs made already (the
        live stream encoded them), so it is read, not called for: a method call per event
        was most of what writing a batch cost."""
        return [item._json or item.json() for item in items]

    @staticmethod
    def keep_json_only_all(items: list[SequencedEvent]) -> int:
        """`keep_json_only` for each event; the bytes of JSON they hold then, in all. One
        pass, no call per event that has its JSON (one of a finished run's does)."""
        held = 0
        for item in items:
            data = item._json or item.json()
            item._event = None
            held += len(data)
        return held

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SequencedEvent):
            return NotImplemented
        return self.seq == other.seq and self.event == other.event

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"SequencedEvent(seq={self.seq}, event={self.event!r})"
