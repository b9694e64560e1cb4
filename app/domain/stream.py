"""What a provider yields and what it is asked: the vendor-neutral model call.

A provider turns vendor stream items into `ProviderEvent`s; the accumulator
(`app.translate.accumulator`) folds them into parts. Non-streaming calls fold the same
events, which is why stream and non-stream give identical parts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, Field

from app.domain.messages import Message


class ToolSpec(BaseModel):
    """A tool as the model sees it: name, description, JSON schema of its arguments."""

    name: str
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})


class NamedToolChoice(BaseModel):
    name: str


ToolChoice = Literal["auto", "none", "required"] | NamedToolChoice


class ModelRequest(BaseModel):
    """One call to a model. `messages` may start with a system message."""

    model: str = Field(description="The upstream model name (not our catalogue id).")
    messages: list[Message]
    tools: list[ToolSpec] = Field(default_factory=list)
    tool_choice: ToolChoice | None = None
    max_output_tokens: int | None = None
    temperature: float | None = None
    parallel_tool_calls: bool | None = None


# Provider events are plain slots dataclasses, not models: several are made per streamed
# token, and they never cross a trust boundary (providers build them from vendor data
# they have already parsed).


@dataclass(frozen=True, slots=True, kw_only=True)
class TextDelta:
    type: Literal["text_delta"] = "text_delta"
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ThinkingDelta:
    type: Literal["thinking_delta"] = "thinking_delta"
    text: str
    signature: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallDelta:
    """A piece of a tool call, keyed by the vendor's index (OpenAI `index`, Anthropic block).

    The first delta for an index carries `id` and `name`; later ones carry argument text.
    """

    type: Literal["tool_call_delta"] = "tool_call_delta"
    index: int
    id: str | None = None
    name: str | None = None
    args_delta: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class Usage:
    type: Literal["usage"] = "usage"
    input_tokens: int = 0
    output_tokens: int = 0


FinishReason = Literal["stop", "tool_calls", "length", "content_filter", "refusal"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Finish:
    type: Literal["finish"] = "finish"
    reason: FinishReason


@dataclass(frozen=True, slots=True, kw_only=True)
class ResponseMeta:
    """The upstream's own response id and the model that answered."""

    type: Literal["response_meta"] = "response_meta"
    response_id: str | None = None
    model: str | None = None


ProviderEvent = TextDelta | ThinkingDelta | ToolCallDelta | Usage | Finish | ResponseMeta
