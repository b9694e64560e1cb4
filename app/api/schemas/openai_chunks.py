"""The frames of a streamed Chat Completion (`chat.completion.chunk`), as typed models.

`app.api.encoders.chat_chunks` builds these and serialises them, and the OpenAPI document
exports the same models as the `/v1/chat/completions` event union, so what a client is
told and what it receives are one thing. Optional fields are left out when unset (OpenAI
sends `delta: {"content": "Hi"}`, not a delta full of nulls); `finish_reason` and
`logprobs` are always sent, null until they mean something, as OpenAI sends them.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, TypeAdapter

from app.api.schemas.chat import ChatUsage


def _unset(value: Any) -> bool:
    return value is None


def _omitted(description: str) -> Any:
    """A field that is left out of the JSON when it is None."""
    return Field(default=None, exclude_if=_unset, description=description)


class ChunkFunction(BaseModel):
    """The function of a streamed tool call: its name once, then argument pieces."""

    name: str | None = _omitted("Tool name (first chunk of the call only).")
    arguments: str = Field(description="A piece of the arguments' JSON text.")


class ChunkToolCall(BaseModel):
    """A piece of a client tool call; pieces with the same `index` form one call."""

    index: int = Field(description="Which call of the message this piece belongs to.")
    id: str | None = _omitted("Tool call id (first chunk of the call only).")
    type: Literal["function"] | None = _omitted("Always `function` (first chunk only).")
    function: ChunkFunction = Field(description="Name and argument text.")


class ServerToolCall(BaseModel):
    """A server tool that ran inside the loop (ours; OpenAI clients ignore it)."""

    index: int | None = _omitted(
        "Streamed chunks only: this entry's place in the stream's `server_tool_calls`, "
        "counted from 0 (as `tool_calls` pieces have one), so delta accumulators merge them."
    )
    id: str = Field(description="Tool call id.")
    name: str = Field(description="Tool name.")
    status: str = Field(
        description="How it ended: `success`, `error` or `cancelled`; or what it waits for: "
        "`waitingConfirmation` (a human's approval) or `waitingSubmission` (the user's answer)."
    )
    error: str | None = _omitted("What went wrong, when status is `error`.")
    approval_id: str | None = _omitted(
        "The approval to decide (`POST /api/approvals/{approval_id}`) while status is "
        "`waitingConfirmation`."
    )


class ChunkDelta(BaseModel):
    """What this chunk adds to the assistant message."""

    role: Literal["assistant"] | None = _omitted("`assistant`, on the first chunk.")
    content: str | None = _omitted("Text to append to the answer.")
    reasoning_content: str | None = _omitted("Reasoning text to append (when shown).")
    refusal: str | None = _omitted("The model's refusal.")
    tool_calls: list[ChunkToolCall] | None = _omitted("Pieces of client tool calls.")
    server_tool_calls: list[ServerToolCall] | None = _omitted("Server tools that ran.")


class ChunkChoice(BaseModel):
    """The single choice of a chunk."""

    index: int = Field(default=0, description="Always 0.")
    delta: ChunkDelta = Field(description="What this chunk adds.")
    finish_reason: Literal["stop", "tool_calls", "length", "content_filter"] | None = Field(
        default=None, description="Set on the last content chunk: why the turn ended."
    )
    logprobs: None = Field(default=None, description="Always null.")


class ChatCompletionChunk(BaseModel):
    """One `chat.completion.chunk` frame of a streamed Chat Completion."""

    id: str = Field(description="Completion id, the same on every chunk.")
    object: Literal["chat.completion.chunk"] = Field(
        default="chat.completion.chunk", description="Always `chat.completion.chunk`."
    )
    created: int = Field(description="Unix seconds.")
    model: str = Field(description="Model id that answers.")
    choices: list[ChunkChoice] = Field(description="One choice; empty on the usage chunk.")
    usage: ChatUsage | None = _omitted(
        "Token usage, on a last chunk of its own with `stream_options.include_usage`."
    )


class ChunkErrorBody(BaseModel):
    """OpenAI's error object as a stream carries it."""

    message: str = Field(description="Human-readable explanation.")
    type: str = Field(
        description="`rate_limit_exceeded` for a rate limit or a spent budget, else `server_error`."
    )
    code: str = Field(description="Machine-readable code, e.g. `provider_error`.")


class ChunkError(BaseModel):
    """The run failed mid-stream (the openai SDK raises `APIError` on it)."""

    error: ChunkErrorBody = Field(description="The error.")


ChatCompletionStreamEvent = Annotated[
    ChatCompletionChunk | ChunkError,
    Field(description="A frame's data; the stream ends with `data: [DONE]`."),
]
CHUNK_EVENTS_ADAPTER: TypeAdapter[ChatCompletionStreamEvent] = TypeAdapter(
    ChatCompletionStreamEvent
)
