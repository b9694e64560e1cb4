"""AG-UI 1.0: run events -> AG-UI events as SSE (`data: {event}`), built from the
`ag-ui-protocol` package's own models and written by its `EventEncoder`.

The reference client (`@ag-ui/client`'s `HttpAgent`) verifies the order: the first event
is `RUN_STARTED`, content goes into something opened and not yet closed, nothing follows
`RUN_FINISHED` or `RUN_ERROR`, and a run may not finish with a text message, reasoning
message or tool call still open. So the encoder closes what it opened before it ends:

- run start -> `RUN_STARTED` (`threadId`, the client's `runId`, `protocolVersion`
  "1.0", `metadata.chatBff` with our run id, conversation id and model). A continuation
  after approvals then reports the decided calls' results (`TOOL_CALL_RESULT`), so the
  client's history holds them before the next model call streams.
- a client that runs on a thread whose history it does not hold (its input has no
  assistant message, the thread has) gets `MESSAGES_SNAPSHOT` after `RUN_STARTED`: the
  stored thread up to its new message (`app.api.encoders.agui_history`).
- text -> `TEXT_MESSAGE_START` (role assistant), `TEXT_MESSAGE_CONTENT`...,
  `TEXT_MESSAGE_END`; thinking -> `REASONING_START`, `REASONING_MESSAGE_START`,
  `REASONING_MESSAGE_CONTENT`..., `REASONING_MESSAGE_END`, `REASONING_END`.
- the assistant message is cut into segments the way AG-UI clients keep history (an
  assistant message, its tool messages, then the next assistant message): the first
  segment has the stored message's id, content after tool results opens a new segment
  (`<run id>-<n>`). Tool calls name their segment as `parentMessageId`.
- a tool call -> `TOOL_CALL_START`, `TOOL_CALL_ARGS`... and `TOOL_CALL_END` once its
  arguments are final. A server tool's result (or error) is `TOOL_CALL_RESULT`
  (`messageId` `<call id>-result`, content the JSON text; an error's content is its
  message and `metadata.chatBff.status` says `error`).
- a client tool (declared in the input's `tools`) ends at `TOOL_CALL_END`: the run ends
  `RUN_FINISHED` with outcome `success` and `pendingToolCallIds`; the client answers with
  tool messages in the next input.
- a server tool that needs a human -> the run ends `RUN_FINISHED` with outcome
  `interrupt`: one interrupt per pending approval (`id` = our approval id, `reason`
  "confirmation", `message` the summary, `toolCallId`, `expiresAt` ISO 8601,
  `responseSchema` for `{approved, reason?}`); a `resume` entry decides it. A server
  tool's question (an MCP elicitation) is an interrupt with `reason` "input_required"
  (`app.api.encoders.agui_interrupts`), answered by a `resume` entry too.
- the end: `completed` / `max_iterations` / `budget_exceeded` -> outcome `success` (our
  metadata's `status` says which, with the budget's `error`); `cancelled` /
  `interrupted` -> outcome `cancelled` (a stop is not an error); `failed` ->
  `RUN_ERROR` (`message`, `code`). Usage rides on `RUN_FINISHED.usage` / `RUN_ERROR.usage`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, assert_never

from ag_ui.core import (
    PROTOCOL_VERSION,
    BaseEvent,
    Interrupt,
    MessagesSnapshotEvent,
    ReasoningEndEvent,
    ReasoningMessageContentEvent,
    ReasoningMessageEndEvent,
    ReasoningMessageStartEvent,
    ReasoningStartEvent,
    RunErrorEvent,
    RunFinishedCancelledOutcome,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunFinishedOutcome,
    RunFinishedSuccessOutcome,
    RunStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    TokenUsage,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)
from ag_ui.encoder import EventEncoder

from app.api.encoders.agui_history import AguiMessage
from app.api.encoders.agui_interrupts import OURS, approval_interrupt, input_interrupt
from app.domain.events import (
    ConfirmRequired,
    ErrorEvent,
    MessageEnd,
    PartUpdate,
    RunEnd,
    RunStart,
    SequencedEvent,
    StepReset,
    TextDeltaEvent,
    ThinkingDeltaEvent,
    ToolArgsDelta,
    ToolEnd,
    ToolError,
    ToolStart,
    UsageInfo,
)
from app.domain.parts import ToolPart

_SSE = EventEncoder()


def frame(event: BaseEvent) -> bytes:
    return _SSE.encode(event).encode()


def farewell_frames(message: str) -> bytes:
    """What a stream cut by a shutdown ends with: an error the client shows."""
    return frame(RunErrorEvent(message=message, code="shutting_down"))


@dataclass
class _Call:
    args_sent: bool = False
    ended: bool = False


@dataclass
class AguiEncoder:
    """Stateful per stream: feed it a run's event batches in order (`encode`)."""

    thread_id: str
    run_id: str
    continues: bool = False
    # Calls a human decided before this run (approved and run, or rejected).
    settled: tuple[ToolPart, ...] = ()
    # The thread as the server holds it, for a client that does not (sent after start).
    snapshot: list[AguiMessage] | None = None
    _our_run: str = ""
    _model: str = ""
    _segment: str = ""
    _segments: int = 0
    _reasonings: int = 0
    _text: str | None = None
    _reasoning: str | None = None
    _calls: dict[str, _Call] = field(default_factory=dict)
    _after_tools: bool = False
    _pending: list[str] = field(default_factory=list)
    _interrupts: list[Interrupt] = field(default_factory=list)
    _error: ErrorEvent | None = None
    _ended: bool = False

    def encode(self, batch: list[SequencedEvent]) -> bytes:
        return b"".join(self._one(item) for item in batch if not self._ended)

    def _one(self, item: SequencedEvent) -> bytes:
        match item.event:
            case RunStart() as event:
                return self._start(event)
            case TextDeltaEvent(delta=delta):
                return self._text_delta(delta)
            case ThinkingDeltaEvent(delta=delta):
                return self._reasoning_delta(delta)
            case ToolStart(part=part):
                return self._tool_start(part)
            case ToolArgsDelta(tool_call_id=call_id, delta=delta):
                return self._args(call_id, delta)
            case ConfirmRequired() | PartUpdate() | StepReset() as event:
                # An update is of an earlier message's part: no event of this run's message.
                # AG-UI runs never fail over after the first byte (README): no reset either.
                return self._confirm(event) if isinstance(event, ConfirmRequired) else b""
            case ToolEnd(part=part):
                return self._result(part, error=None)
            case ToolError(part=part, error=error):
                return self._result(part, error=error)
            case MessageEnd():
                return self._close_blocks()
            case ErrorEvent() as event:
                self._error = event
                return b""
            case RunEnd() as event:
                return self._end(event)
            case unknown:
                assert_never(unknown)

    # -- the start and segments ------------------------------------------------------

    def _start(self, event: RunStart) -> bytes:
        self._our_run, self._model = event.run_id, event.model
        self._segment = event.message_id
        if self.continues:
            self._next_segment()
        ours: dict[str, Any] = {"runId": event.run_id, "model": event.model}
        if event.conversation_id is not None:
            ours["conversationId"] = event.conversation_id
        started = RunStartedEvent(
            thread_id=self.thread_id,
            run_id=self.run_id,
            protocol_version=PROTOCOL_VERSION,
            metadata={OURS: ours},
        )
        out = frame(started)
        if self.snapshot is not None:
            out += frame(MessagesSnapshotEvent(messages=self.snapshot))
        return out + b"".join(self._settle(part) for part in self.settled)

    def _settle(self, part: ToolPart) -> bytes:
        if part.data.status == "success":
            return self._result_frame(part.id, _json(part.data.result), "success")
        text = part.data.bodyContent or f"The tool call ended {part.data.status}."
        return self._result_frame(part.id, text, part.data.status)

    def _next_segment(self) -> None:
        self._segments += 1
        self._segment = f"{self._our_run}-{self._segments}"

    def _content_follows(self) -> None:
        """Content after tool results comes from the next model call: a new segment."""
        if self._after_tools:
            self._after_tools = False
            self._next_segment()

    # -- text and reasoning ----------------------------------------------------------

    def _text_delta(self, delta: str) -> bytes:
        out = b""
        if self._text is None:
            self._content_follows()
            out = self._close_reasoning()
            self._text = self._segment
            out += frame(TextMessageStartEvent(message_id=self._text, role="assistant"))
        return out + frame(TextMessageContentEvent(message_id=self._text, delta=delta))

    def _reasoning_delta(self, delta: str) -> bytes:
        out = b""
        if self._reasoning is None:
            self._content_follows()
            out = self._close_text()
            self._reasonings += 1
            self._reasoning = f"{self._segment}-reasoning-{self._reasonings}"
            out += frame(ReasoningStartEvent(message_id=self._reasoning))
            out += frame(ReasoningMessageStartEvent(message_id=self._reasoning, role="reasoning"))
        return out + frame(ReasoningMessageContentEvent(message_id=self._reasoning, delta=delta))

    def _close_text(self) -> bytes:
        block, self._text = self._text, None
        return frame(TextMessageEndEvent(message_id=block)) if block is not None else b""

    def _close_reasoning(self) -> bytes:
        block, self._reasoning = self._reasoning, None
        if block is None:
            return b""
        return frame(ReasoningMessageEndEvent(message_id=block)) + frame(
            ReasoningEndEvent(message_id=block)
        )

    def _close_blocks(self) -> bytes:
        return self._close_text() + self._close_reasoning()

    # -- tools -----------------------------------------------------------------------

    def _tool_start(self, part: ToolPart) -> bytes:
        if part.id in self._calls:
            return b""
        self._content_follows()
        out = self._close_blocks()
        self._calls[part.id] = _Call()
        start = ToolCallStartEvent(
            tool_call_id=part.id,
            tool_call_name=part.data.toolName,
            parent_message_id=self._segment,
        )
        return out + frame(start)

    def _args(self, call_id: str, delta: str) -> bytes:
        call = self._calls.get(call_id)
        if call is None or call.ended:
            return b""
        call.args_sent = True
        return frame(ToolCallArgsEvent(tool_call_id=call_id, delta=delta))

    def _end_call(self, part: ToolPart) -> bytes:
        """The arguments are final: send them if nothing streamed, then close the call."""
        call = self._calls.get(part.id)
        if call is None or call.ended:
            return b""
        call.ended = True
        out = b""
        if not call.args_sent and part.data.args is not None:
            out = frame(ToolCallArgsEvent(tool_call_id=part.id, delta=_json(part.data.args)))
        return out + frame(ToolCallEndEvent(tool_call_id=part.id))

    def _result_frame(self, call_id: str, content: str, status: str) -> bytes:
        result = ToolCallResultEvent(
            message_id=f"{call_id}-result",
            tool_call_id=call_id,
            content=content,
            role="tool",
            metadata={OURS: {"status": status}},
        )
        return frame(result)

    def _result(self, part: ToolPart, *, error: str | None) -> bytes:
        if part.id not in self._calls:
            return b""
        out = self._end_call(part)
        del self._calls[part.id]
        self._after_tools = True
        if error is None:
            return out + self._result_frame(part.id, _json(part.data.result), "success")
        return out + self._result_frame(part.id, error, "error")

    def _confirm(self, event: ConfirmRequired) -> bytes:
        out = self._end_call(event.part)
        self._calls.pop(event.part.id, None)
        if event.kind == "client_tool":
            self._pending.append(event.part.id)
        elif event.approval_id is not None:
            self._interrupts.append(approval_interrupt(event, event.approval_id))
        elif event.kind == "input" and (asked := input_interrupt(event.part)) is not None:
            self._interrupts.append(asked)
        return out

    # -- the end ---------------------------------------------------------------------

    def _end(self, event: RunEnd) -> bytes:
        self._ended = True
        out = self._close_blocks()
        for call_id in list(self._calls):
            call = self._calls.pop(call_id)
            if not call.ended:
                out += frame(ToolCallEndEvent(tool_call_id=call_id))
        usage = self._usage(event.usage)
        ours: dict[str, Any] = {"runId": self._our_run, "status": event.status}
        if event.status == "budget_exceeded":  # a success outcome that says why it stopped
            ours["error"] = event.error
        if event.status == "failed":
            error = self._error
            detail = (event.error or {}).get("message")
            message = error.message if error else detail if isinstance(detail, str) else ""
            code = error.code if error else str((event.error or {}).get("code") or "run_failed")
            failed = RunErrorEvent(
                message=message or "The run failed.", code=code, usage=usage, metadata={OURS: ours}
            )
            return out + frame(failed)
        finished = RunFinishedEvent(
            thread_id=self.thread_id,
            run_id=self.run_id,
            outcome=self._outcome(event),
            usage=usage,
            metadata={OURS: ours},
        )
        return out + frame(finished)

    def _outcome(self, event: RunEnd) -> RunFinishedOutcome:
        if event.status in ("cancelled", "interrupted"):
            return RunFinishedCancelledOutcome()
        if event.status == "requires_action" and self._interrupts:
            return RunFinishedInterruptOutcome(interrupts=self._interrupts)
        return RunFinishedSuccessOutcome(pending_tool_call_ids=self._pending or None)

    def _usage(self, usage: UsageInfo) -> list[TokenUsage] | None:
        if usage.model_calls == 0:
            return None
        return [
            TokenUsage(
                model=self._model,
                input_tokens=usage.input_tokens,
                output_tokens=usage.output_tokens,
                total_tokens=usage.input_tokens + usage.output_tokens,
                cached_input_tokens=usage.cached_tokens or None,
            )
        ]


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
