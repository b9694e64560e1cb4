"""Bodies of the OpenAI Responses surface (`/v1/responses`)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from app.api.schemas.refused import refuse_smuggled


class ResponsesRequest(BaseModel):
    """OpenAI's Responses create request; unsupported parameters are ignored."""

    model_config = ConfigDict(extra="allow")

    model: str | None = Field(default=None, description="Model id from GET /api/models.")
    input: str | list[dict[str, Any]] = Field(
        description="A user message, or input items: messages, function_call and "
        "function_call_output items (client tool round trips)."
    )
    instructions: str | None = Field(default=None, description="A system message, sent first.")
    tools: list[dict[str, Any]] | None = Field(
        default=None, description="Client function tools: {type: 'function', name, parameters}."
    )
    tool_choice: str | dict[str, Any] | None = Field(
        default=None, description="auto, none, required or {type: 'function', name}."
    )
    parallel_tool_calls: bool | None = Field(default=None, description="Accepted and echoed.")
    stream: bool = Field(default=False, description="Stream Responses events as SSE.")
    max_output_tokens: int | None = Field(default=None, ge=1, description="Output token cap.")
    temperature: float | None = Field(default=None, ge=0, le=2, description="Sampling.")
    metadata: dict[str, str] | None = Field(default=None, description="Echoed in the response.")
    previous_response_id: str | None = Field(
        default=None, description="Not supported: responses are not stored; send the history."
    )
    conversation: Any | None = Field(default=None, description="Not supported (stateless).")
    background: bool | None = Field(default=None, description="Not supported (stateless).")

    @model_validator(mode="after")
    def _refuse_smuggled(self) -> ResponsesRequest:
        refuse_smuggled(self.model_extra)
        return self


class ResponseObject(BaseModel):
    """The Response object (documented subset; the full shape is OpenAI's)."""

    model_config = ConfigDict(extra="allow")

    id: str = Field(description="`resp_` + the run id's hex.")
    object: str = Field(default="response", description="Always `response`.")
    status: str = Field(description="completed, incomplete, cancelled or failed.")
    model: str = Field(description="Catalogue id of the model that answered.")
    output: list[dict[str, Any]] = Field(
        description="Output items: message, reasoning, function_call (client tools to run), "
        "mcp_call (server tools that already ran), mcp_approval_request."
    )
    usage: dict[str, Any] | None = Field(default=None, description="Token usage of the run.")
