"""DTOs of `POST /api/chat` (the request AIKit's reference chat sends)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictFloat, StrictInt

from app.api.schemas.chat_messages import ChatMessageIn
from app.domain.events import RunStatus, UsageInfo
from app.domain.messages import Message
from app.domain.stream import TOOL_NAME_PATTERN


class FunctionDef(BaseModel):
    """A client tool's function definition (OpenAI function-tool shape)."""

    model_config = ConfigDict(extra="forbid")
    name: str = Field(
        pattern=TOOL_NAME_PATTERN, description="Tool name: 1-64 letters, digits, _ or -."
    )
    description: str | None = Field(default=None, description="What the tool does.")
    parameters: dict[str, Any] | None = Field(
        default=None, description="JSON schema of the arguments."
    )
    strict: StrictBool | None = Field(default=None, description="Accepted and ignored.")


class ClientTool(BaseModel):
    """A tool the browser declares and runs itself (OpenAI function-tool shape)."""

    model_config = ConfigDict(extra="forbid")
    type: Literal["function"] = Field(default="function", description="Always `function`.")
    function: FunctionDef = Field(description="The function definition.")


class ChatRequest(BaseModel):
    """A stateless chat turn. Unknown fields are refused (`api_key`, `base_url`, ...)."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {"messages": [{"role": "user", "content": "Hello!"}]},
                {
                    "messages": [
                        {"role": "user", "content": [{"type": "text", "data": {"text": "Hi"}}]}
                    ],
                    "stream": True,
                },
            ]
        },
    )

    messages: list[ChatMessageIn] = Field(
        min_length=1,
        description=(
            "The conversation so far: OpenAI Chat Completions messages or AIKit messages "
            "with typed parts (they may be mixed)."
        ),
    )
    model: str | None = Field(default=None, description="Model id; the default when absent.")
    tools: list[ClientTool] | None = Field(
        default=None, description="Client tools: the browser runs them, never the server."
    )
    tool_choice: str | dict[str, Any] | None = Field(
        default=None, description="`auto`, `none`, `required` or a named function."
    )
    stream: StrictBool = Field(default=False, description="Answer as native SSE.")
    temperature: StrictFloat | None = Field(default=None, ge=0, le=2, description="Sampling.")
    max_tokens: StrictInt | None = Field(default=None, ge=1, description="Cap on output tokens.")
    on_disconnect: Literal["cancel", "continue"] = Field(
        default="cancel",
        description="What happens to the run when a streaming client goes away.",
    )


class PromptTokensDetails(BaseModel):
    """OpenAI's breakdown of the prompt tokens."""

    cached_tokens: int = Field(default=0, description="Prompt tokens served from cache.")


class ChatUsage(BaseModel):
    """Token usage in OpenAI's shape, summed over the run's model calls."""

    prompt_tokens: int = Field(description="Prompt tokens over all model calls.")
    completion_tokens: int = Field(description="Completion tokens over all model calls.")
    total_tokens: int = Field(description="Their sum.")
    prompt_tokens_details: PromptTokensDetails = Field(
        default_factory=PromptTokensDetails, description="Cached prompt tokens."
    )
    cost: float | None = Field(
        default=None, description="What the tokens cost (catalogue prices); ours, not OpenAI's."
    )
    estimated: bool = Field(
        default=False, description="True when some call's tokens were counted here; ours."
    )


class ChatToolCallFunction(BaseModel):
    """Which function a tool call names, with its raw JSON arguments."""

    name: str = Field(description="Tool name.")
    arguments: str = Field(description="Arguments as a JSON string.")


class ChatToolCall(BaseModel):
    """A client tool call in OpenAI's shape; the browser runs it."""

    id: str = Field(description="Tool call id; answer with a `role: tool` message.")
    type: Literal["function"] = Field(default="function", description="Always `function`.")
    function: ChatToolCallFunction = Field(description="Which function, with what arguments.")


class ChatCompletionMessage(BaseModel):
    """The assistant message as OpenAI clients read it."""

    role: Literal["assistant"] = Field(default="assistant", description="Always assistant.")
    content: str | None = Field(description="The answer text; null with only tool calls.")
    tool_calls: list[ChatToolCall] | None = Field(
        default=None, description="Client tool calls the browser should run."
    )


class ChatChoice(BaseModel):
    """The single choice of a Chat Completions answer (OpenAI shape)."""

    index: int = Field(default=0, description="Always 0.")
    message: ChatCompletionMessage = Field(description="The assistant's message.")
    finish_reason: Literal["stop", "tool_calls", "length", "content_filter"] = Field(
        description="Why the turn ended."
    )


class _CompletionFields(BaseModel):
    id: str = Field(description="Completion id.")
    object: Literal["chat.completion"] = Field(
        default="chat.completion", description="Always `chat.completion`."
    )
    created: int = Field(description="Unix seconds.")
    model: str = Field(description="Model id that answered.")
    usage: ChatUsage = Field(description="Token usage.")


class ChatCompletion(_CompletionFields):
    """A Chat Completions object, as `/v1/chat/completions` answers (OpenAI's shape)."""

    choices: list[ChatChoice] = Field(description="One choice.")


class NativeChatChoice(BaseModel):
    """The choice of an `/api/chat` answer: OpenAI's, plus `requires_action`."""

    index: int = Field(default=0, description="Always 0.")
    message: ChatCompletionMessage = Field(description="The assistant's message.")
    finish_reason: Literal["stop", "tool_calls", "length", "content_filter", "requires_action"] = (
        Field(
            description="Why the turn ended; `requires_action`: a server tool waits for a "
            "human's approval (`message` holds its part with `data.approvalId`)."
        )
    )


class ChatResponse(_CompletionFields):
    """A Chat Completions object (unchanged OpenAI-shaped clients work) plus typed parts."""

    choices: list[NativeChatChoice] = Field(description="One choice.")
    message: Message = Field(description="The assistant turn as an AIKit message.")
    messages: list[Message] = Field(
        description="The full updated history (send it back as-is for the next turn)."
    )
    run_id: str = Field(description="The run that produced this answer.")
    status: RunStatus = Field(description="How the run ended.")
    run_usage: UsageInfo = Field(description="Usage including the number of model calls.")
