"""OpenAI Chat Completions streaming (`chat.completion.chunk` frames + `[DONE]`).

Fed by the same run events as the native protocol. Only the client's own tools surface
as `tool_calls`: server tools run inside the loop and an OpenAI client that saw them
would try to run them itself. Text from successive model calls is joined with a blank
line, exactly as the non-streaming answer joins it, so both paths read the same.

Streamed text cannot be taken back on this wire, so a streamed Chat Completions run never
fails over after its first byte (the non-streamed answer is the stored message, which
holds only the replacement's); a `step_reset` of a run another wire started writes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, assert_never

from pydantic import BaseModel, TypeAdapter

from app.api.schemas.chat import ChatUsage, PromptTokensDetails
from app.api.schemas.openai_chunks import (
    ChatCompletionChunk,
    ChunkChoice,
    ChunkDelta,
    ChunkError,
    ChunkErrorBody,
    ChunkFunction,
    ChunkToolCall,
    ServerToolCall,
)
from app.domain.errors import openai_error_type
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

DONE = b"data: [DONE]\n\n"
_TEXT = TypeAdapter(str)  # a string as the chunk models serialise it
FinishReason = Literal["stop", "tool_calls", "length", "content_filter"]
_FINISH: dict[str, FinishReason] = {
    "completed": "stop",
    "requires_action": "tool_calls",
    "max_iterations": "length",
    "cancelled": "stop",
    "interrupted": "stop",
    "failed": "stop",
    "budget_exceeded": "length",
}


def _frame(value: BaseModel) -> bytes:
    return b"data: " + value.__pydantic_serializer__.to_json(value) + b"\n\n"


@dataclass
class ChatChunkEncoder:
    completion_id: str
    model: str
    created: int
    client_tools: frozenset[str]
    include_usage: bool = False
    _tool_index: dict[str, int] = field(default_factory=dict)
    _server_reports: int = 0  # `server_tool_calls` entries sent so far (their `index`)
    _wrote_text: bool = False
    _separator_due: bool = False
    _refusal: str | None = None  # the model declined (MessageEnd said so)
    _cut_short: bool = False  # the answer stopped at its output token limit
    # A text chunk's frame around its `content` value (`_text_frame`), made on first use.
    _text_template: tuple[bytes, bytes] | None = None

    def _chunk(self, delta: ChunkDelta, finish: FinishReason | None = None) -> bytes:
        choice = ChunkChoice(delta=delta, finish_reason=finish)
        return _frame(self._body([choice]))

    def _body(
        self, choices: list[ChunkChoice], usage: ChatUsage | None = None
    ) -> ChatCompletionChunk:
        return ChatCompletionChunk(
            id=self.completion_id,
            created=self.created,
            model=self.model,
            choices=choices,
            usage=usage,
        )

    def encode(self, batch: list[SequencedEvent]) -> bytes:
        if len(batch) == 1:  # how a stream asks (`app.api.streaming`): once per event
            return self._one(batch[0])
        return b"".join([self._one(item) for item in batch])

    def _one(self, item: SequencedEvent) -> bytes:
        event = item.event
        if isinstance(event, RunStart):
            return self._chunk(ChunkDelta(role="assistant", content=""))
        if isinstance(event, TextDeltaEvent):
            return self._text(event.delta)
        if isinstance(event, ThinkingDeltaEvent):
            return self._chunk(ChunkDelta(reasoning_content=event.delta))
        if isinstance(event, ToolStart):
            return self._tool_start(event.part)
        if isinstance(event, ToolArgsDelta):
            return self._tool_args(event)
        if isinstance(event, MessageEnd):
            return self._message_end(event.message.metadata or {})
        if isinstance(event, ToolEnd | ToolError):
            return self._tool_done(event.part)
        if isinstance(event, ConfirmRequired):
            return self._waiting(event)
        if isinstance(event, PartUpdate | StepReset):
            # An update is of an earlier message's card, nothing of this answer.
            return b""
        if isinstance(event, ErrorEvent):
            error = ChunkErrorBody(
                message=event.message, type=openai_error_type(event.code), code=event.code
            )
            return _frame(ChunkError(error=error))
        if isinstance(event, RunEnd):
            return self._end(event)
        assert_never(event)

    def _tool_args(self, event: ToolArgsDelta) -> bytes:
        index = self._tool_index.get(event.tool_call_id)
        if index is None:  # a server tool's arguments: not the client's to see
            return b""
        piece = ChunkToolCall(index=index, function=ChunkFunction(arguments=event.delta))
        return self._chunk(ChunkDelta(tool_calls=[piece]))

    def _waiting(self, event: ConfirmRequired) -> bytes:
        # A card waits (text after it is a new paragraph). A server tool's wait is the
        # client's to know, or the turn just stops with the call nowhere in sight.
        self._separator_due = True
        if event.kind == "client_tool" or event.part.data.toolName in self.client_tools:
            return b""
        return self._server_report(server_tool_call(event.part, event.approval_id))

    def _text(self, text: str) -> bytes:
        if self._separator_due and self._wrote_text:
            text = "\n\n" + text
        self._separator_due = False
        self._wrote_text = True
        return self._text_frame(text)

    def _text_frame(self, text: str) -> bytes:
        """What `_chunk(ChunkDelta(content=text))` makes, byte for byte, without making it.

        The text chunks of a stream differ only in their text: the frame is built once
        with empty content and each token's JSON string goes between its halves. Three
        models and a serialisation per token were most of this wire's CPU per chunk. A
        value can hold `"content":""` only escaped, so the first match is the field.
        """
        if self._text_template is None:
            frame = self._chunk(ChunkDelta(content=""))
            head, found, tail = frame.partition(b'"content":""')
            assert found, frame
            self._text_template = (head + b'"content":', tail)
        head, tail = self._text_template
        return head + _TEXT.dump_json(text) + tail

    def _tool_start(self, part: ToolPart) -> bytes:
        name = part.data.toolName
        if name not in self.client_tools:
            self._separator_due = True
            return b""
        index = self._tool_index.setdefault(part.id, len(self._tool_index))
        function = ChunkFunction(name=name, arguments="")
        call = ChunkToolCall(index=index, id=part.id, type="function", function=function)
        return self._chunk(ChunkDelta(tool_calls=[call]))

    def _message_end(self, metadata: dict[str, Any]) -> bytes:
        self._separator_due = True
        self._cut_short = metadata.get("finish_reason") == "length"
        if metadata.get("finish_reason") == "content_filter":
            self._refusal = str(metadata.get("refusal") or "")
            if not self._wrote_text and self._refusal:
                return self._chunk(ChunkDelta(refusal=self._refusal))
        return b""

    def _tool_done(self, part: ToolPart) -> bytes:
        self._separator_due = True
        if part.data.toolName in self.client_tools:
            return b""
        # A server tool ran inside the loop: not a call for the client to make, but what
        # happened is the client's to know (a failure must not hide behind the model's
        # answer). `server_tool_calls` is ours; OpenAI clients ignore it.
        return self._server_report(server_tool_call(part))

    def _server_report(self, call: ServerToolCall) -> bytes:
        # Each entry gets the next `index`, as `tool_calls` pieces carry one: the openai
        # SDK's stream helper merges every list of a delta by `index`, and an entry without
        # one raised RuntimeError at a turn's second server tool.
        call.index = self._server_reports
        self._server_reports += 1
        return self._chunk(ChunkDelta(server_tool_calls=[call]))

    def _end(self, event: RunEnd) -> bytes:
        finish = _FINISH[event.status]
        if event.status == "requires_action" and not self._tool_index:
            finish = "stop"
        if self._refusal is not None and event.status == "completed":
            finish = "content_filter"
        elif self._cut_short and event.status == "completed":
            finish = "length"
        out = self._chunk(ChunkDelta(), finish)
        if self.include_usage:
            out += _frame(self._body([], chat_usage(event.usage)))
        return out + DONE


def chat_usage(usage: UsageInfo) -> ChatUsage:
    """A run's usage in OpenAI's shape (cached prompt tokens in `prompt_tokens_details`)."""
    return ChatUsage(
        prompt_tokens=usage.input_tokens,
        completion_tokens=usage.output_tokens,
        total_tokens=usage.input_tokens + usage.output_tokens,
        prompt_tokens_details=PromptTokensDetails(cached_tokens=usage.cached_tokens),
        cost=usage.cost,
        estimated=usage.estimated,
    )


def server_tool_call(part: ToolPart, approval_id: str | None = None) -> ServerToolCall:
    """A server tool call as `server_tool_calls` shows it: what ran and how it ended, or
    what it waits for (`approval_id`: the event's, else the one the part carries)."""
    data = part.data
    call = ServerToolCall(id=part.id, name=data.toolName, status=data.status)
    if data.status == "error":
        result = data.result if isinstance(data.result, dict) else {}
        call.error = str(data.bodyContent or result.get("error") or "The tool failed.")
    elif data.status == "waitingConfirmation":
        call.approval_id = approval_id or data.approvalId
    return call
