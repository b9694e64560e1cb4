"""The objects of the OpenAI Responses wire as typed models: the Response and its output
items (the events that carry them are `responses_events`).

`app.api.encoders.responses_objects` builds these and the encoder serialises them; the
OpenAPI document exports the same models as the non-streaming answer and inside the
`/v1/responses` events, so what a client is told and what it receives are one thing.
Field order is the wire's (the openai SDK's).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

ItemStatus = Literal["in_progress", "completed", "incomplete", "calling", "failed"]
ResponseStatus = Literal["in_progress", "completed", "incomplete", "cancelled", "failed"]


class OutputText(BaseModel):
    """Text content of a message item (`logprobs` only once the item is done)."""

    type: Literal["output_text"] = Field(default="output_text", description="The part kind.")
    text: str = Field(description="The text.")
    annotations: list[Any] = Field(default_factory=list, description="Always empty.")
    logprobs: list[Any] | None = Field(
        default=None,
        exclude_if=lambda value: value is None,
        description="Always empty; present on a done message item's part.",
    )


class ReasoningText(BaseModel):
    """Reasoning content of a reasoning item."""

    type: Literal["reasoning_text"] = Field(default="reasoning_text", description="The part kind.")
    text: str = Field(description="The visible reasoning.")


class MessageItem(BaseModel):
    """Answer text; text after tools ran is a new message item."""

    id: str = Field(description="`msg_<run>_<n>`.")
    type: Literal["message"] = Field(default="message", description="The item kind.")
    role: Literal["assistant"] = Field(default="assistant", description="Always assistant.")
    status: ItemStatus = Field(description="`in_progress` until done.")
    content: list[OutputText] = Field(description="One text part once done; empty when added.")


class ReasoningItem(BaseModel):
    """The model's visible reasoning (read it from `output_item.done`)."""

    id: str = Field(description="`rs_<run>_<n>`.")
    type: Literal["reasoning"] = Field(default="reasoning", description="The item kind.")
    summary: list[Any] = Field(default_factory=list, description="Always empty.")
    content: list[ReasoningText] = Field(description="The reasoning once done.")
    status: ItemStatus = Field(description="`in_progress` until done.")


class FunctionCallItem(BaseModel):
    """A call of a client tool: the client runs it and sends the result back."""

    id: str = Field(description="`fc_<call id>`.")
    type: Literal["function_call"] = Field(default="function_call", description="Item kind.")
    call_id: str = Field(description="The call id to answer with `function_call_output`.")
    name: str = Field(description="Tool name.")
    arguments: str = Field(description="Arguments as JSON text.")
    status: ItemStatus = Field(description="`completed` when parked for the client.")


class McpCallItem(BaseModel):
    """A server tool call that ran (or waits for approval) inside chat-bff."""

    id: str = Field(description="Our tool call id.")
    type: Literal["mcp_call"] = Field(default="mcp_call", description="The item kind.")
    name: str = Field(description="Tool name.")
    server_label: str = Field(description="Always `chat-bff`.")
    arguments: str = Field(description="Arguments as JSON text.")
    status: ItemStatus = Field(description="`completed`, `failed`, or `calling` (approval).")
    output: str | None = Field(description="The result as text (the error when failed).")
    error: dict[str, Any] | None = Field(description="`{type, content}` when failed.")
    approval_request_id: str | None = Field(description="Set while awaiting approval.")


class McpApprovalRequestItem(BaseModel):
    """A server tool call awaiting a human: answer it with an `mcp_approval_response`
    input item (or through `/api/approvals/{id}`)."""

    id: str = Field(description="The approval id.")
    type: Literal["mcp_approval_request"] = Field(
        default="mcp_approval_request", description="The item kind."
    )
    name: str = Field(description="Tool name.")
    server_label: str = Field(description="Always `chat-bff`.")
    arguments: str = Field(description="Arguments as JSON text.")


class McpSubmissionRequestItem(BaseModel):
    """A tool call waiting for the user, the shape AIKit shows as `waitingSubmission`.

    `server_label: chat-bff`: a server tool asking a question (an MCP server's
    elicitation), answered through `POST /api/conversations/{id}/submissions/{id}`.
    `server_label: client`: a client tool's call (request `client_tool_items:
    submission_request`), answered by a `function_call_output` input item whose `call_id`
    is this item's id."""

    id: str = Field(description="The tool call id.")
    type: Literal["mcp_submission_request"] = Field(
        default="mcp_submission_request", description="The item kind."
    )
    name: str = Field(description="Tool name.")
    server_label: str = Field(description="`chat-bff` (a server tool) or `client`.")
    arguments: str = Field(description="The call's arguments as JSON text.")
    message: str = Field(description="The question the tool asks.")
    requested_schema: dict[str, Any] = Field(description="JSON schema of the answer's `content`.")


OutputItem = Annotated[
    MessageItem
    | ReasoningItem
    | FunctionCallItem
    | McpCallItem
    | McpApprovalRequestItem
    | McpSubmissionRequestItem,
    Field(discriminator="type"),
]


class InputTokensDetails(BaseModel):
    """Cached prompt tokens (none counted apart)."""

    cached_tokens: int = Field(default=0, description="Always 0.")
    cache_write_tokens: int = Field(default=0, description="Always 0.")


class OutputTokensDetails(BaseModel):
    """Reasoning tokens (none counted apart)."""

    reasoning_tokens: int = Field(default=0, description="Always 0.")


class ResponseUsage(BaseModel):
    """Token usage of the run, over all its model calls."""

    input_tokens: int = Field(description="Prompt tokens.")
    input_tokens_details: InputTokensDetails = Field(
        default_factory=InputTokensDetails, description="Cache details."
    )
    output_tokens: int = Field(description="Completion tokens.")
    output_tokens_details: OutputTokensDetails = Field(
        default_factory=OutputTokensDetails, description="Reasoning details."
    )
    total_tokens: int = Field(description="Their sum.")


class ResponseError(BaseModel):
    """Why a Response failed."""

    code: str = Field(description="`server_error` or `rate_limit_exceeded`.")
    message: str = Field(description="Human-readable explanation.")
    type: str = Field(description="Our error code, e.g. `provider_error`.")


class IncompleteDetails(BaseModel):
    """Why a Response is incomplete."""

    reason: str = Field(description="`max_output_tokens` or `content_filter`.")


class ResponseObject(BaseModel):
    """The Response object, streamed in `response.*` events and answered without streaming."""

    id: str = Field(description="`resp_` + the run id's hex.")
    object: Literal["response"] = Field(default="response", description="Always `response`.")
    created_at: int = Field(description="Unix seconds.")
    status: ResponseStatus = Field(description="Where the response stands.")
    error: ResponseError | None = Field(default=None, description="Set when failed.")
    incomplete_details: IncompleteDetails | None = Field(
        default=None, description="Set when incomplete."
    )
    instructions: str | None = Field(default=None, description="Echoed from the request.")
    max_output_tokens: int | None = Field(default=None, description="Echoed.")
    metadata: dict[str, Any] = Field(default_factory=dict, description="Echoed.")
    model: str = Field(description="Catalogue id of the model that answered.")
    output: list[OutputItem] = Field(
        default_factory=list, description="Finished output items, in order."
    )
    parallel_tool_calls: bool = Field(default=True, description="Echoed.")
    previous_response_id: str | None = Field(
        default=None, description="The response this one continues, as the request named it."
    )
    conversation: dict[str, str] | None = Field(
        default=None,
        exclude_if=lambda value: value is None,
        description="The durable conversation this response is a turn of (only then present).",
    )
    background: bool | None = Field(
        default=None,
        exclude_if=lambda value: value is None,
        description="`true` for a background response (only then present).",
    )
    temperature: int | float | None = Field(default=None, description="Echoed.")
    text: dict[str, Any] = Field(
        default_factory=lambda: {"format": {"type": "text"}}, description="Output format."
    )
    tool_choice: str | dict[str, Any] = Field(default="auto", description="Echoed.")
    tools: list[dict[str, Any]] = Field(default_factory=list, description="Echoed tools.")
    top_p: float | None = Field(default=None, description="Always null.")
    truncation: str = Field(default="disabled", description="Always `disabled`.")
    usage: ResponseUsage | None = Field(default=None, description="Set once terminal.")
