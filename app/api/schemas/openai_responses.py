"""Bodies of the OpenAI Responses surface (`/v1/responses`)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictFloat, StrictInt

from app.api.schemas.openai_metadata import OpenAIMetadata


class TextOptions(BaseModel):
    """Responses `text`: the output format and verbosity."""

    model_config = ConfigDict(extra="forbid")
    format: dict[str, Any] | None = Field(
        default=None,
        description="`{type: text | json_object}` or `{type: json_schema, name, schema, strict}`.",
    )
    verbosity: Literal["low", "medium", "high"] | None = Field(
        default=None, description="Answer length hint (OpenAI)."
    )


class ReasoningOptions(BaseModel):
    """Responses `reasoning`: effort, and whether to summarise (reasoning text is streamed
    whenever the model sends it)."""

    model_config = ConfigDict(extra="forbid")
    effort: Literal["none", "minimal", "low", "medium", "high", "xhigh"] | None = Field(
        default=None, description="Reasoning effort."
    )
    summary: str | None = Field(default=None, description="Accepted (auto, concise, detailed).")
    generate_summary: str | None = Field(default=None, description="Older name of summary.")


class ResponsesRequest(BaseModel):
    """OpenAI's Responses create request. Every parameter is forwarded to the model's
    provider, translated, or refused with a 400 naming it (see the README's table)."""

    model_config = ConfigDict(extra="allow")

    model: str | None = Field(
        default=None, min_length=1, description="Model id from GET /api/models."
    )
    input: str | list[dict[str, Any]] = Field(
        description="A user message, or input items: messages, function_call and "
        "function_call_output items (client tool round trips), and mcp_approval_response "
        "items `{approval_request_id, approve, reason?}` that decide a pending approval."
    )
    instructions: str | None = Field(default=None, description="A system message, sent first.")
    tools: list[dict[str, Any]] | None = Field(
        default=None, description="Client function tools: {type: 'function', name, parameters}."
    )
    tool_choice: str | dict[str, Any] | None = Field(
        default=None, description="auto, none, required or {type: 'function', name}."
    )
    parallel_tool_calls: StrictBool | None = Field(default=None, description="Accepted and echoed.")
    stream: StrictBool = Field(default=False, description="Stream Responses events as SSE.")
    max_output_tokens: StrictInt | None = Field(default=None, ge=1, description="Output token cap.")
    temperature: StrictFloat | None = Field(default=None, ge=0, le=2, description="Sampling.")
    metadata: OpenAIMetadata | None = Field(default=None, description="Echoed in the response.")
    previous_response_id: str | None = Field(
        default=None,
        description="A stored response of yours (a `conversation`'s or a `background` one) "
        "to continue: this request is the next turn of its conversation. It must be the "
        "latest of that conversation; not with `conversation`.",
    )
    conversation: str | dict[str, Any] | None = Field(
        default=None,
        description="A durable conversation (id or {id}) this turn continues; the last "
        "input item is the user's message.",
    )
    background: StrictBool | None = Field(
        default=None,
        description="`true`: answer at once (`in_progress`) and run on with no client "
        "attached; poll, stream or cancel it through /v1/responses/{id}. Without "
        "`conversation` a new conversation holds the request. Requires `store` not false.",
    )
    client_tool_items: Literal["function_call", "submission_request"] = Field(
        default="function_call",
        description="How a client tool call the client must answer is shown: `function_call` "
        "items (OpenAI's, what the openai SDK's function calling reads), or one "
        "`mcp_submission_request` item `{id: call id, name, arguments, server_label: "
        "'client'}` (Gravity UI AIKit shows it as `waitingSubmission`). Either is answered "
        "by a `function_call_output` input item with that `call_id`. Not OpenAI's: the "
        "openai SDK sends it with `extra_body`.",
    )
    text: TextOptions | None = Field(default=None, description="Output format, verbosity.")
    reasoning: ReasoningOptions | None = Field(default=None, description="Reasoning effort.")
    top_p: StrictFloat | None = Field(default=None, ge=0, le=1, description="Nucleus sampling.")
    top_logprobs: StrictInt | None = Field(default=None, ge=0, le=20, description="OpenAI.")
    service_tier: str | None = Field(default=None, description="OpenAI's service tier.")
    user: str | None = Field(default=None, max_length=256, description="End-user id.")
    safety_identifier: str | None = Field(
        default=None, max_length=256, description="Same as `user` (OpenAI's newer name)."
    )
    truncation: Literal["auto", "disabled"] | None = Field(
        default=None, description="Accepted: history is always fitted to the context window."
    )
    store: StrictBool | None = Field(
        default=None,
        description="The upstream provider is never asked to store; only responses of a "
        "`conversation` or `background` are stored here (GET /v1/responses/{id}). "
        "`false` with `background` is a 400.",
    )
    include: list[str] | None = Field(
        default=None, description="Only empty: no extra output data is produced."
    )
