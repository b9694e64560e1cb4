"""Bodies of the OpenAI-compatible Chat Completions surface (`/v1/chat/completions`,
`/v1/models`)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from app.api.schemas.refused import refuse_smuggled


class StreamOptions(BaseModel):
    """OpenAI's streaming options."""

    model_config = ConfigDict(extra="ignore")
    include_usage: bool = Field(default=False, description="Send a final usage chunk.")


class ChatCompletionRequest(BaseModel):
    """OpenAI's chat completion request; unsupported parameters are ignored."""

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

    model: str = Field(description="Model id from GET /api/models.")
    messages: list[dict[str, Any]] = Field(min_length=1, description="Chat messages.")
    stream: bool = Field(default=False, description="Stream chunks as SSE.")
    stream_options: StreamOptions | None = Field(default=None, description="Streaming options.")
    tools: list[dict[str, Any]] | None = Field(default=None, description="Function tools.")
    tool_choice: str | dict[str, Any] | None = Field(default=None, description="Tool choice.")
    parallel_tool_calls: bool | None = Field(default=None, description="Accepted.")
    temperature: float | None = Field(default=None, ge=0, le=2, description="Sampling.")
    max_tokens: int | None = Field(default=None, ge=1, description="Output token cap.")
    max_completion_tokens: int | None = Field(default=None, ge=1, description="Same.")
    n: int | None = Field(default=None, ge=1, le=1, description="Only 1 is supported.")

    @model_validator(mode="after")
    def _refuse_smuggled(self) -> ChatCompletionRequest:
        refuse_smuggled(self.model_extra)
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
