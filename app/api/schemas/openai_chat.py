"""Bodies of the OpenAI-compatible Chat Completions surface (`/v1/chat/completions`,
`/v1/models`)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    model_validator,
)

from app.api.errors import OpenAIParamError
from app.api.schemas.chat_messages import ChatMessageIn
from app.api.schemas.openai_values import LogitBias, ResponseFormat, Seed, StopSequences


class StreamOptions(BaseModel):
    """OpenAI's streaming options."""

    model_config = ConfigDict(extra="ignore")
    include_usage: StrictBool = Field(default=False, description="Send a final usage chunk.")


class ChatCompletionRequest(BaseModel):
    """OpenAI's chat completion request. Every parameter is forwarded to the model's
    provider, translated, or refused with a 400 naming it (see the README's table);
    none is dropped silently."""

    model_config = ConfigDict(
        extra="allow",
        json_schema_extra={
            "examples": [
                {"model": "scripted", "messages": [{"role": "user", "content": "Hello!"}]},
                {
                    "model": "scripted",
                    "messages": [{"role": "user", "content": "Hi"}],
                    "stream": True,
                    "stream_options": {"include_usage": True},
                },
            ]
        },
    )

    model: str = Field(min_length=1, description="Model id from GET /api/models.")
    messages: list[ChatMessageIn] = Field(
        min_length=1, description="Chat messages, a union discriminated on `role`."
    )
    stream: StrictBool = Field(default=False, description="Stream chunks as SSE.")
    stream_options: StreamOptions | None = Field(default=None, description="Streaming options.")
    tools: list[dict[str, Any]] | None = Field(default=None, description="Function tools.")
    tool_choice: str | dict[str, Any] | None = Field(default=None, description="Tool choice.")
    parallel_tool_calls: StrictBool | None = Field(default=None, description="Accepted.")
    temperature: StrictFloat | None = Field(default=None, ge=0, le=2, description="Sampling.")
    max_tokens: StrictInt | None = Field(default=None, ge=1, description="Output token cap.")
    max_completion_tokens: StrictInt | None = Field(default=None, ge=1, description="Same.")
    n: StrictInt | None = Field(default=None, ge=1, le=1, description="Only 1 is supported.")
    stop: StopSequences | None = Field(default=None, description="Stop sequences (up to 4).")
    top_p: StrictFloat | None = Field(default=None, ge=0, le=1, description="Nucleus sampling.")
    seed: Seed | None = Field(default=None, description="Best-effort determinism (OpenAI).")
    response_format: ResponseFormat | None = Field(
        default=None,
        description="`{type: text | json_object}` or `{type: json_schema, json_schema: "
        "{name, schema, strict}}` (structured outputs; Anthropic gets output_config.format).",
    )
    reasoning_effort: Literal["none", "minimal", "low", "medium", "high", "xhigh"] | None = Field(
        default=None, description="Reasoning effort (Anthropic: output_config.effort)."
    )
    verbosity: Literal["low", "medium", "high"] | None = Field(
        default=None, description="Answer length hint (OpenAI)."
    )
    logprobs: StrictBool | None = Field(
        default=None, description="Token log probabilities (OpenAI)."
    )
    top_logprobs: StrictInt | None = Field(default=None, ge=0, le=20, description="With logprobs.")
    frequency_penalty: StrictFloat | None = Field(default=None, ge=-2, le=2, description="OpenAI.")
    presence_penalty: StrictFloat | None = Field(default=None, ge=-2, le=2, description="OpenAI.")
    logit_bias: LogitBias | None = Field(
        default=None, description="OpenAI: token id -> bias in [-100, 100]."
    )
    service_tier: str | None = Field(default=None, description="OpenAI's service tier.")
    user: str | None = Field(
        default=None, max_length=256, description="End-user id (Anthropic: metadata.user_id)."
    )
    safety_identifier: str | None = Field(
        default=None, max_length=256, description="Same as `user` (OpenAI's newer name)."
    )
    store: StrictBool | None = Field(
        default=None, description="Only false: chat-bff never asks the provider to store."
    )

    @model_validator(mode="after")
    def _stream_options_need_a_stream(self) -> ChatCompletionRequest:
        # As OpenAI does: a client sending them believes it asked for a stream.
        if self.stream_options is not None and not self.stream:
            raise OpenAIParamError(
                "invalid_value",
                "stream_options",
                "The 'stream_options' parameter is only allowed when 'stream' is enabled.",
            )
        return self


class OpenAIModel(BaseModel):
    """A model as OpenAI's `GET /v1/models` lists it."""

    id: str = Field(description="Model id to send as `model`.")
    object: Literal["model"] = Field(default="model", description="Always `model`.")
    created: int = Field(description="Unix seconds; 0, the catalogue has no dates.")
    owned_by: str = Field(description="The provider serving it.")


class OpenAIModelList(BaseModel):
    """OpenAI's model list, so `client.models.list()` works against chat-bff."""

    object: Literal["list"] = Field(default="list", description="Always `list`.")
    data: list[OpenAIModel] = Field(description="The models this caller may use.")
