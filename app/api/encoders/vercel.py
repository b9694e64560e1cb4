"""Vercel AI SDK UI message stream: run events -> `data: {chunk}` frames, `data: [DONE]`.

The wire `useChat` / `DefaultChatTransport` / `readUIMessageStream` of the `ai` package
read (header `x-vercel-ai-ui-message-stream: v1`). The client is strict: every chunk is
checked against a zod union (an unknown `type` throws) and a delta needs its start, so the
encoder writes only what the client's major version knows and always opens before it
writes into something:

- run start -> `start` (`messageId` = the stored assistant message, `messageMetadata`
  `{runId, conversationId, model}`), then `start-step`.
- text -> `text-start`, `text-delta`..., `text-end`; thinking -> `reasoning-start`,
  `reasoning-delta`..., `reasoning-end`. Text and reasoning never interleave inside one
  block: a switch closes the open one.
- a tool call -> `tool-input-start`, `tool-input-delta`..., then, once the arguments are
  final (the call ended, failed or waits), `tool-input-available` with the parsed input.
  Server tools carry `dynamic: true` (the client did not declare them, so they render as
  `dynamic-tool` parts) and `providerExecuted: true` (the client must not run them); their
  results are `tool-output-available` / `tool-output-error`. A call whose arguments were
  not valid JSON is `tool-input-error` with the raw text.
- steps: content that follows tool results comes from the next model call, so it opens a
  new step (`finish-step`, `start-step`).
- a pending server approval -> v6/v7: `tool-approval-request` (`approvalId` is our
  approval id; the client's approval response decides it). v5 has no approval chunk, so it
  gets a `data-approval` part (`{approvalId, toolCallId, toolName, summary, expiresAt}`)
  to decide through `POST /api/approvals/{id}`. v5 never gets `tool-approval-request`,
  `tool-output-denied`, `custom` or `reset-step`; this encoder writes no `custom`, and
  `reset-step` only to v7.
- a server tool's question (an MCP elicitation, `waitingSubmission`) -> `data-elicitation`
  (`{elicitationId, toolCallId, toolName, message, requestedSchema}`), answered through
  `POST /api/conversations/{conversationId}/submissions/{toolCallId}`.
- failover after the first byte (`step_reset`): v7 gets `reset-step`, which drops the
  failed call's parts from the client's message, then `message-metadata` naming the model
  answering now; v5/v6 have no way to take parts back, so their open blocks and calls are
  closed (calls as errors) and the replacement follows as a new step. A run is only
  allowed this failover when it was started by a reader that can retract (v7 here), so
  v5/v6 meet it only when they resume a run another client started.
- the end: `finish` (`finishReason` stop / tool-calls / other / error, `messageMetadata`
  with the run's `usage`), or `abort` when the run was cancelled or interrupted (a stop is
  not an error), or `error` + `finish` when it failed; always `data: [DONE]` last.

A continuation after approvals (`decided`) first settles the calls the human decided, so
the client's waiting parts turn into outputs before the next model call streams.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, assert_never

from pydantic import BaseModel

from app.api.schemas.ui_chunks import (
    AbortChunk,
    ApprovalData,
    DataApprovalChunk,
    ErrorChunk,
    FinishChunk,
    FinishStepChunk,
    MessageMetadataChunk,
    ReasoningDeltaChunk,
    ReasoningEndChunk,
    ReasoningStartChunk,
    ResetStepChunk,
    StartChunk,
    StartStepChunk,
    TextDeltaChunk,
    TextEndChunk,
    TextStartChunk,
    ToolApprovalRequestChunk,
    ToolInputAvailableChunk,
    ToolInputDeltaChunk,
    ToolInputErrorChunk,
    ToolInputStartChunk,
    ToolOutputAvailableChunk,
    ToolOutputDeniedChunk,
    ToolOutputErrorChunk,
    elicitation_chunk,
)
from app.domain.events import (
    ConfirmRequired,
    ErrorEvent,
    MessageEnd,
    PartUpdate,
    RunEnd,
    RunStart,
    RunStatus,
    SequencedEvent,
    StepReset,
    TextDeltaEvent,
    ThinkingDeltaEvent,
    ToolArgsDelta,
    ToolEnd,
    ToolError,
    ToolStart,
)
from app.domain.parts import ToolPart

ClientMajor = Literal[5, 6, 7]
CLIENT_MAJORS: tuple[ClientMajor, ...] = (5, 6, 7)
HEADERS = {"x-vercel-ai-ui-message-stream": "v1"}
DONE = b"data: [DONE]\n\n"
_FINISH: dict[RunStatus, str] = {
    "completed": "stop",
    "requires_action": "tool-calls",
    "max_iterations": "other",
    "budget_exceeded": "length",
    "failed": "error",
    "running": "other",
}
_UNFINISHED = "The run ended before this call finished."
_REPLACED = "The model's stream failed; another model answers instead."


def chunk(body: BaseModel) -> bytes:
    """One SSE frame; JSON escapes newlines, so no text can break out of its frame."""
    return b"data: " + body.__pydantic_serializer__.to_json(body) + b"\n\n"


def farewell_frames(message: str) -> bytes:
    """What a stream cut by a shutdown ends with: an error the client shows, then the end."""
    return chunk(ErrorChunk(errorText=message)) + DONE


@dataclass(frozen=True)
class Decided:
    """A call a human decided before this run: its settled part, and whether approved."""

    part: ToolPart
    approved: bool


@dataclass
class _Call:
    name: str
    server: bool
    args_text: str = ""
    input_sent: bool = False


@dataclass
class VercelEncoder:
    """Stateful per stream: feed it a run's event batches in order (`encode`)."""

    major: ClientMajor
    client_tools: frozenset[str] = frozenset()
    # The stream continues an assistant message the client already holds (after an
    # approval): `start` then names no message id, so the client keeps appending to it.
    continues: bool = False
    decided: tuple[Decided, ...] = ()
    _message_id: str = ""
    _blocks: int = 0
    _text: str | None = None
    _reasoning: str | None = None
    _calls: dict[str, _Call] = field(default_factory=dict)
    _after_tools: bool = False
    _step_open: bool = False
    _errored: bool = False
    _ended: bool = False

    def encode(self, batch: list[SequencedEvent]) -> bytes:
        return b"".join(self._one(item) for item in batch if not self._ended)

    # -- events ----------------------------------------------------------------------

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
                return self._args_delta(call_id, delta)
            case ConfirmRequired() | PartUpdate() as event:
                # An update is of an earlier message's part: no chunk of this message.
                return self._confirm(event) if isinstance(event, ConfirmRequired) else b""
            case ToolEnd() | ToolError() as event:
                error = event.error if isinstance(event, ToolError) else None
                return self._tool_done(event.part, error=error)
            case StepReset() as event:
                return self._reset(event)
            case MessageEnd():
                return self._close_blocks()
            case ErrorEvent(message=message):
                self._errored = True
                return chunk(ErrorChunk(errorText=message))
            case RunEnd() as event:
                return self._end(event)
            case unknown:
                assert_never(unknown)

    def _start(self, event: RunStart) -> bytes:
        self._message_id = event.message_id
        metadata = {"runId": event.run_id, "model": event.model}
        if event.conversation_id is not None:
            metadata["conversationId"] = event.conversation_id
        message_id = None if self.continues else event.message_id
        body = StartChunk(messageId=message_id, messageMetadata=metadata)
        # The decided calls belong to the step the client already holds; the new model
        # call is a new step.
        self._step_open = True
        settled = b"".join(self._settle(decided) for decided in self.decided)
        return chunk(body) + settled + chunk(StartStepChunk())

    def _settle(self, decided: Decided) -> bytes:
        call_id, data = decided.part.id, decided.part.data
        if not decided.approved and self.major >= 6:
            return chunk(ToolOutputDeniedChunk(toolCallId=call_id))
        if data.status == "success":
            return chunk(self._output(call_id, data.result))
        error = data.bodyContent or "The tool call did not succeed."
        return chunk(ToolOutputErrorChunk(toolCallId=call_id, errorText=error, **_server_flags()))

    def _next_step(self) -> bytes:
        """Content after tool results belongs to the next model call: a new step."""
        if not self._after_tools:
            return b""
        self._after_tools = False
        return chunk(FinishStepChunk()) + chunk(StartStepChunk())

    def _block_id(self) -> str:
        self._blocks += 1
        return f"{self._message_id}_{self._blocks}"

    def _text_delta(self, delta: str) -> bytes:
        out = b""
        if self._text is None:
            out = self._next_step() + self._close_reasoning()
            self._text = self._block_id()
            out += chunk(TextStartChunk(id=self._text))
        return out + chunk(TextDeltaChunk(id=self._text, delta=delta))

    def _reasoning_delta(self, delta: str) -> bytes:
        out = b""
        if self._reasoning is None:
            out = self._next_step() + self._close_text()
            self._reasoning = self._block_id()
            out += chunk(ReasoningStartChunk(id=self._reasoning))
        return out + chunk(ReasoningDeltaChunk(id=self._reasoning, delta=delta))

    def _close_text(self) -> bytes:
        block, self._text = self._text, None
        return chunk(TextEndChunk(id=block)) if block is not None else b""

    def _close_reasoning(self) -> bytes:
        block, self._reasoning = self._reasoning, None
        return chunk(ReasoningEndChunk(id=block)) if block is not None else b""

    def _close_blocks(self) -> bytes:
        return self._close_text() + self._close_reasoning()

    # -- tools -----------------------------------------------------------------------

    def _tool_start(self, part: ToolPart) -> bytes:
        if part.id in self._calls:
            return b""
        out = self._next_step() + self._close_blocks()
        name = part.data.toolName
        call = _Call(name=name, server=name not in self.client_tools)
        self._calls[part.id] = call
        flags = _server_flags(call.server)
        return out + chunk(ToolInputStartChunk(toolCallId=part.id, toolName=name, **flags))

    def _args_delta(self, call_id: str, delta: str) -> bytes:
        call = self._calls.get(call_id)
        if call is None:
            return b""
        call.args_text += delta
        return chunk(ToolInputDeltaChunk(toolCallId=call_id, inputTextDelta=delta))

    def _input(self, part: ToolPart, call: _Call) -> bytes:
        """The final input, once: a server tool's may be pinned or edited since it streamed."""
        if call.input_sent:
            return b""
        call.input_sent = True
        body = ToolInputAvailableChunk(
            toolCallId=part.id,
            toolName=call.name,
            input=part.data.args if part.data.args is not None else {},
            **_server_flags(call.server),
        )
        return chunk(body)

    def _output(self, call_id: str, result: Any, server: bool = True) -> ToolOutputAvailableChunk:
        return ToolOutputAvailableChunk(toolCallId=call_id, output=result, **_server_flags(server))

    def _tool_done(self, part: ToolPart, *, error: str | None) -> bytes:
        call = self._calls.pop(part.id, None)
        if call is None:  # never announced (defensive: nothing to settle)
            return b""
        self._after_tools = True
        if error is not None and part.data.args is None and not call.input_sent:
            # The model's arguments were not JSON: the call never ran.
            refused = ToolInputErrorChunk(
                toolCallId=part.id,
                toolName=call.name,
                input=call.args_text,
                errorText=error,
                **_server_flags(call.server),
            )
            return chunk(refused)
        out = self._input(part, call)
        if error is None:
            return out + chunk(self._output(part.id, part.data.result, call.server))
        flags = _server_flags(call.server)
        return out + chunk(ToolOutputErrorChunk(toolCallId=part.id, errorText=error, **flags))

    def _confirm(self, event: ConfirmRequired) -> bytes:
        call = self._calls.pop(event.part.id, None)
        if call is None:
            return b""
        out = self._input(event.part, call)
        asked = elicitation_chunk(event.part) if event.kind == "input" else None
        if asked is not None:
            return out + chunk(asked)
        if event.kind != "approval" or event.approval_id is None:
            return out
        if self.major >= 6:
            request = ToolApprovalRequestChunk(
                approvalId=event.approval_id, toolCallId=event.part.id
            )
            return out + chunk(request)
        data = ApprovalData(
            approvalId=event.approval_id,
            toolCallId=event.part.id,
            toolName=call.name,
            summary=event.summary,
            expiresAt=event.expires_at,
        )
        return out + chunk(DataApprovalChunk(id=event.approval_id, data=data))

    # -- failover after the first byte -----------------------------------------------

    def _reset(self, event: StepReset) -> bytes:
        metadata = event.message.metadata or {}
        fields = {"model": event.model, "fallbackFrom": metadata.get("fallback_from")}
        fields["replacedAttempts"] = metadata.get("replaced_attempts", [])
        note = MessageMetadataChunk(messageMetadata={k: v for k, v in fields.items() if v})
        self._after_tools = False
        if self.major >= 7:  # the client drops the step's parts and their open blocks
            self._text = self._reasoning = None
            self._calls.clear()
            return chunk(ResetStepChunk()) + chunk(note)
        out = self._close_blocks() + self._abandon_calls(_REPLACED)
        return out + chunk(FinishStepChunk()) + chunk(StartStepChunk()) + chunk(note)

    def _abandon_calls(self, error: str) -> bytes:
        """Calls that will never finish, closed as errors so no card keeps spinning."""
        out = b""
        for call_id, call in list(self._calls.items()):
            del self._calls[call_id]
            flags = _server_flags(call.server)
            out += chunk(ToolOutputErrorChunk(toolCallId=call_id, errorText=error, **flags))
        return out

    # -- the end ---------------------------------------------------------------------

    def _end(self, event: RunEnd) -> bytes:
        status, usage = event.status, event.usage
        self._ended = True
        out = self._close_blocks() + self._abandon_calls(_UNFINISHED)
        if self._step_open:
            out += chunk(FinishStepChunk())
        if status in ("cancelled", "interrupted"):
            abort = AbortChunk(reason=status if self.major >= 6 else None)
            return out + chunk(abort) + DONE
        if status == "failed" and not self._errored:
            detail = (event.error or {}).get("message")
            text = detail if isinstance(detail, str) and detail else "The run failed."
            out += chunk(ErrorChunk(errorText=text))
        tokens: dict[str, int] = {
            "inputTokens": usage.input_tokens,
            "outputTokens": usage.output_tokens,
            "totalTokens": usage.input_tokens + usage.output_tokens,
        }
        if usage.cached_tokens:
            tokens["cachedInputTokens"] = usage.cached_tokens
        metadata: dict[str, Any] = {
            "runStatus": status,
            "usage": tokens,
            "modelCalls": usage.model_calls,
        }
        if usage.cost is not None:
            metadata["cost"] = usage.cost
        if status == "budget_exceeded" and event.error:
            metadata["budget"] = event.error
        finish = FinishChunk(finishReason=_FINISH[status], messageMetadata=metadata)
        return out + chunk(finish) + DONE


def _server_flags(server: bool = True) -> dict[str, Any]:
    """Server tools render as dynamic tools the client must not run itself. Output chunks
    repeat `dynamic`: ai v5 looks the call up among dynamic parts only when they say so."""
    return {"dynamic": True, "providerExecuted": True} if server else {}
