"""The streaming events of the OpenAI Responses wire as typed models.

`app.api.encoders.responses` builds and serialises these, and the OpenAPI document exports
the same union as the `/v1/responses` event stream (`ResponseStreamEvent`, discriminated on
`type`), so the schema is what the bytes are.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, TypeAdapter

from app.api.schemas.responses_items import OutputItem, OutputText, ReasoningText, ResponseObject

# Every event is `type` first and `sequence_number` last, the order the wire has; each
# class spells its fields out because pydantic puts inherited fields first.
_SEQ: Any = Field(description="Position in the stream, from 0.")


def _kind(name: str) -> Any:
    return Field(default=name, description="The event name.")


class ResponseCreated(BaseModel):
    """The stream's first event."""

    type: Literal["response.created"] = _kind("response.created")
    response: ResponseObject = Field(description="The Response as it stands.")
    sequence_number: int = _SEQ


class ResponseInProgress(BaseModel):
    """The response is being generated."""

    type: Literal["response.in_progress"] = _kind("response.in_progress")
    response: ResponseObject = Field(description="The Response as it stands.")
    sequence_number: int = _SEQ


class ResponseCompleted(BaseModel):
    """The run ended (completed, or awaiting client tools or an approval)."""

    type: Literal["response.completed"] = _kind("response.completed")
    response: ResponseObject = Field(description="The Response as it stands.")
    sequence_number: int = _SEQ


class ResponseIncomplete(BaseModel):
    """The run was cut short: iteration cap, refusal, or cancelled by the client."""

    type: Literal["response.incomplete"] = _kind("response.incomplete")
    response: ResponseObject = Field(description="The Response as it stands.")
    sequence_number: int = _SEQ


class ResponseFailed(BaseModel):
    """The run failed, or was interrupted (its process stopped or died under it); after an
    `error` event when it streamed one."""

    type: Literal["response.failed"] = _kind("response.failed")
    response: ResponseObject = Field(description="The Response as it stands.")
    sequence_number: int = _SEQ


class OutputItemAdded(BaseModel):
    """An output item begins (no content yet)."""

    type: Literal["response.output_item.added"] = _kind("response.output_item.added")
    output_index: int = Field(description="The item's place in `output`.")
    item: OutputItem = Field(description="The item, as announced.")
    sequence_number: int = _SEQ


class OutputItemDone(BaseModel):
    """An output item is finished."""

    type: Literal["response.output_item.done"] = _kind("response.output_item.done")
    output_index: int = Field(description="The item's place in `output`.")
    item: OutputItem = Field(description="The finished item.")
    sequence_number: int = _SEQ


class ContentPartAdded(BaseModel):
    """A text or reasoning part begins."""

    type: Literal["response.content_part.added"] = _kind("response.content_part.added")
    item_id: str = Field(description="The item's id.")
    output_index: int = Field(description="The item's place in `output`.")
    content_index: int = Field(description="The part's place in the item's content.")
    part: OutputText | ReasoningText = Field(description="The part, empty.")
    sequence_number: int = _SEQ


class ContentPartDone(BaseModel):
    """A text or reasoning part is finished."""

    type: Literal["response.content_part.done"] = _kind("response.content_part.done")
    item_id: str = Field(description="The item's id.")
    output_index: int = Field(description="The item's place in `output`.")
    content_index: int = Field(description="The part's place in the item's content.")
    part: OutputText | ReasoningText = Field(description="The whole part.")
    sequence_number: int = _SEQ


class OutputTextDelta(BaseModel):
    """A piece of answer text."""

    type: Literal["response.output_text.delta"] = _kind("response.output_text.delta")
    item_id: str = Field(description="The item's id.")
    output_index: int = Field(description="The item's place in `output`.")
    content_index: int = Field(description="The part's place in the item's content.")
    delta: str = Field(description="Text to append.")
    logprobs: list[Any] = Field(default_factory=list, description="Always empty.")
    sequence_number: int = _SEQ


class OutputTextDone(BaseModel):
    """The text part's whole text."""

    type: Literal["response.output_text.done"] = _kind("response.output_text.done")
    item_id: str = Field(description="The item's id.")
    output_index: int = Field(description="The item's place in `output`.")
    content_index: int = Field(description="The part's place in the item's content.")
    text: str = Field(description="The whole text.")
    logprobs: list[Any] = Field(default_factory=list, description="Always empty.")
    sequence_number: int = _SEQ


class ReasoningTextDelta(BaseModel):
    """A piece of visible reasoning (the whole text comes in `output_item.done`)."""

    type: Literal["response.reasoning_text.delta"] = _kind("response.reasoning_text.delta")
    item_id: str = Field(description="The item's id.")
    output_index: int = Field(description="The item's place in `output`.")
    content_index: int = Field(description="The part's place in the item's content.")
    delta: str = Field(description="Reasoning text to append.")
    sequence_number: int = _SEQ


class McpCallInProgress(BaseModel):
    """A server tool call began."""

    type: Literal["response.mcp_call.in_progress"] = _kind("response.mcp_call.in_progress")
    item_id: str = Field(description="The item's id.")
    output_index: int = Field(description="The item's place in `output`.")
    sequence_number: int = _SEQ


class McpCallCompleted(BaseModel):
    """A server tool call succeeded (its output is in `output_item.done`)."""

    type: Literal["response.mcp_call.completed"] = _kind("response.mcp_call.completed")
    item_id: str = Field(description="The item's id.")
    output_index: int = Field(description="The item's place in `output`.")
    sequence_number: int = _SEQ


class McpCallFailed(BaseModel):
    """A server tool call failed (the error is in `output_item.done`)."""

    type: Literal["response.mcp_call.failed"] = _kind("response.mcp_call.failed")
    item_id: str = Field(description="The item's id.")
    output_index: int = Field(description="The item's place in `output`.")
    sequence_number: int = _SEQ


class McpCallArgumentsDelta(BaseModel):
    """A piece of a server tool call's arguments."""

    type: Literal["response.mcp_call_arguments.delta"] = _kind("response.mcp_call_arguments.delta")
    item_id: str = Field(description="The item's id.")
    output_index: int = Field(description="The item's place in `output`.")
    delta: str = Field(description="JSON text to append.")
    sequence_number: int = _SEQ


class McpCallArgumentsDone(BaseModel):
    """A server tool call's final arguments (pinned scope arguments included)."""

    type: Literal["response.mcp_call_arguments.done"] = _kind("response.mcp_call_arguments.done")
    item_id: str = Field(description="The item's id.")
    output_index: int = Field(description="The item's place in `output`.")
    arguments: str = Field(description="The whole arguments JSON.")
    sequence_number: int = _SEQ


class FunctionCallArgumentsDelta(BaseModel):
    """A piece of a client tool call's arguments."""

    type: Literal["response.function_call_arguments.delta"] = _kind(
        "response.function_call_arguments.delta"
    )
    item_id: str = Field(description="The item's id.")
    output_index: int = Field(description="The item's place in `output`.")
    delta: str = Field(description="JSON text to append.")
    sequence_number: int = _SEQ


class FunctionCallArgumentsDone(BaseModel):
    """A client tool call's whole arguments."""

    type: Literal["response.function_call_arguments.done"] = _kind(
        "response.function_call_arguments.done"
    )
    item_id: str = Field(description="The item's id.")
    output_index: int = Field(description="The item's place in `output`.")
    arguments: str = Field(description="The whole arguments JSON.")
    sequence_number: int = _SEQ


class StreamError(BaseModel):
    """The `error` object of an error event, where AIKit reads the message it shows."""

    type: str = Field(description="`server_error` or `rate_limit_exceeded`.")
    code: str = Field(description="Our error code.")
    message: str = Field(description="Human-readable explanation.")


class ResponseErrorEvent(BaseModel):
    """The run failed; `response.failed` follows. OpenAI's fields (`code`, `message`,
    `param`) plus `error` with the same message: AIKit shows `error.message` (without it,
    only "Stream error"). The openai SDK raises `APIError` on this event."""

    type: Literal["error"] = _kind("error")
    code: str = Field(description="Our error code.")
    message: str = Field(description="Human-readable explanation.")
    param: None = Field(default=None, description="Always null.")
    error: StreamError = Field(description="The same error as an object (AIKit reads it).")
    sequence_number: int = _SEQ


ResponseStreamEvent = Annotated[
    ResponseCreated
    | ResponseInProgress
    | ResponseCompleted
    | ResponseIncomplete
    | ResponseFailed
    | OutputItemAdded
    | OutputItemDone
    | ContentPartAdded
    | ContentPartDone
    | OutputTextDelta
    | OutputTextDone
    | ReasoningTextDelta
    | McpCallInProgress
    | McpCallCompleted
    | McpCallFailed
    | McpCallArgumentsDelta
    | McpCallArgumentsDone
    | FunctionCallArgumentsDelta
    | FunctionCallArgumentsDone
    | ResponseErrorEvent,
    Field(discriminator="type"),
]
RESPONSE_EVENTS_ADAPTER: TypeAdapter[ResponseStreamEvent] = TypeAdapter(ResponseStreamEvent)
