"""What a provider yields and what it is asked: the vendor-neutral model call.

A provider turns vendor stream items into `ProviderEvent`s; the parts builder
(`app.translate.accumulator`) folds them into parts. Every model call streams, and every
answer (streamed to a client or not) is built from those events, which is why stream and
non-stream answers have identical parts.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from app.domain.messages import Message

# A tool's name, as OpenAI and Anthropic accept it: 1-64 letters, digits, `_` or `-`.
TOOL_NAME_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"


class ToolSpec(BaseModel):
    """A tool as the model sees it: name, description, JSON schema of its arguments."""

    name: str
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})


class NamedToolChoice(BaseModel):
    name: str


ToolChoice = Literal["auto", "none", "required"] | NamedToolChoice


ReasoningEffort = Literal["none", "minimal", "low", "medium", "high", "xhigh"]


class GenerationOptions(BaseModel):
    """What a client may ask of generation beyond the basics, in OpenAI's terms.

    A provider forwards what it supports (each provider's `supports` names them) and
    translates what has an equivalent; a request naming one it cannot honour is refused
    before any run starts, never silently dropped. `response_format` is OpenAI's shape:
    `{"type": "text" | "json_object"}` or `{"type": "json_schema", "json_schema": {...}}`.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    stop: list[str] | None = None
    top_p: float | None = None
    seed: int | None = None
    response_format: dict[str, Any] | None = None
    reasoning_effort: ReasoningEffort | None = None
    verbosity: Literal["low", "medium", "high"] | None = None
    logprobs: bool | None = None
    top_logprobs: int | None = None
    frequency_penalty: float | None = None
    presence_penalty: float | None = None
    logit_bias: dict[str, float] | None = None
    service_tier: str | None = None
    user: str | None = None

    def named(self) -> list[str]:
        """The options this request sets, in declaration order."""
        return [name for name in type(self).model_fields if getattr(self, name) is not None]

    def or_shared(self) -> GenerationOptions:
        """These options, or the one shared instance when they set none (`no_options`)."""
        return self if self.named() else no_options()


@cache
def no_options() -> GenerationOptions:
    """The options of a request that sets none: one frozen instance for all of them. A
    request's options live as long as its run (and its stream); an instance with its field
    dict and the set of fields given is about 1 KB, which every open stream held although
    nearly none sets any (`python -m bench.memory`)."""
    return GenerationOptions()


class ModelRequest(BaseModel):
    """One call to a model. `messages` may start with a system message."""

    model: str = Field(description="The upstream model name (not our catalogue id).")
    messages: list[Message]
    tools: list[ToolSpec] = Field(default_factory=list)
    tool_choice: ToolChoice | None = None
    max_output_tokens: int | None = None
    temperature: float | None = None
    parallel_tool_calls: bool | None = None
    options: GenerationOptions = Field(default_factory=no_options)


def only_given(**fields: Any) -> dict[str, Any]:
    """The optional `ModelRequest` fields among `fields` that say something: not None, not
    an empty list, not the shared `no_options()` (each is what the field defaults to).

    pydantic keeps the set of names a model was given for as long as the model lives, and
    a request lives as long as its call streams: past four names that set takes 728 bytes
    instead of 216 (`python -m bench.memory --probe`). The request equals one given every
    name; only `model_fields_set`, which nothing reads for a request, differs."""
    return {
        name: value
        for name, value in fields.items()
        if value is not None and value != [] and value is not no_options()
    }


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
    cached_tokens: int = 0  # of input_tokens, served from the provider's prompt cache


FinishReason = Literal["stop", "tool_calls", "length", "content_filter", "refusal"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Finish:
    type: Literal["finish"] = "finish"
    reason: FinishReason
    # Why, when the provider said (the explanation of a refusal).
    detail: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ResponseMeta:
    """The upstream's own response id and the model that answered."""

    type: Literal["response_meta"] = "response_meta"
    response_id: str | None = None
    model: str | None = None
    # Our catalogue id, set by failover when a fallback (not the asked model) answers.
    model_id: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class StreamReset:
    """Failover after the first byte: the call streaming so far failed and everything it
    streamed is void; the events that follow are the replacement's, from its start."""

    type: Literal["stream_reset"] = "stream_reset"
    failed_model_id: str  # our catalogue id of the model whose stream failed
    model_id: str  # our catalogue id of the model answering instead
    code: str  # the failure's error code, e.g. provider_unavailable


ProviderEvent = (
    TextDelta | ThinkingDelta | ToolCallDelta | Usage | Finish | ResponseMeta | StreamReset
)
