"""The Vercel AI SDK UI message stream chunks, as typed models.

`app.api.encoders.vercel` builds and serialises these, and the OpenAPI document exports the
same union (`UIMessageChunk`, discriminated on `type`) for `/api/ui/chat`, so what a client
is told and what it receives are one thing. Fields are the `ai` package's camelCase, in its
order; optional ones are left out when unset (its zod schemas refuse a null where they
expect a string or a flag).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, TypeAdapter

from app.domain.parts import ToolPart


def _unset(value: Any) -> bool:
    return value is None


def _kind(name: str) -> Any:
    return Field(default=name, description="The chunk type.")


def _optional(description: str) -> Any:
    return Field(default=None, exclude_if=_unset, description=description)


_ID: Any = Field(description="The text or reasoning block's id.")
_CALL: Any = Field(description="The tool call id.")


# Server tools render as dynamic tools the client must not run itself; these two fields
# close the chunks of their calls (declared last in each class: the wire's order).
_DYNAMIC: Any = _optional("True for a server tool (a `dynamic-tool` part).")
_EXECUTED: Any = _optional("True for a server tool: the client must not run it.")


class StartChunk(BaseModel):
    """The assistant message begins."""

    type: Literal["start"] = _kind("start")
    messageId: str | None = _optional("The stored message id (absent on a continuation).")
    messageMetadata: dict[str, Any] = Field(description="`{runId, model, conversationId?}`.")


class StartStepChunk(BaseModel):
    """A model call begins."""

    type: Literal["start-step"] = _kind("start-step")


class FinishStepChunk(BaseModel):
    """A model call ended."""

    type: Literal["finish-step"] = _kind("finish-step")


class ResetStepChunk(BaseModel):
    """ai v7: drop every part of the current step; the model call streaming it failed and
    another model answers it again (failover after the first byte)."""

    type: Literal["reset-step"] = _kind("reset-step")


class MessageMetadataChunk(BaseModel):
    """Metadata merged into the message's (after a `reset-step`: which model answers now)."""

    type: Literal["message-metadata"] = _kind("message-metadata")
    messageMetadata: dict[str, Any] = Field(
        description="`{model, fallbackFrom, replacedAttempts: [{model, error}]}`."
    )


class TextStartChunk(BaseModel):
    """A text block begins."""

    type: Literal["text-start"] = _kind("text-start")
    id: str = _ID


class TextDeltaChunk(BaseModel):
    """A piece of text."""

    type: Literal["text-delta"] = _kind("text-delta")
    id: str = _ID
    delta: str = Field(description="Text to append.")


class TextEndChunk(BaseModel):
    """A text block ends."""

    type: Literal["text-end"] = _kind("text-end")
    id: str = _ID


class ReasoningStartChunk(BaseModel):
    """A reasoning block begins."""

    type: Literal["reasoning-start"] = _kind("reasoning-start")
    id: str = _ID


class ReasoningDeltaChunk(BaseModel):
    """A piece of visible reasoning."""

    type: Literal["reasoning-delta"] = _kind("reasoning-delta")
    id: str = _ID
    delta: str = Field(description="Reasoning text to append.")


class ReasoningEndChunk(BaseModel):
    """A reasoning block ends."""

    type: Literal["reasoning-end"] = _kind("reasoning-end")
    id: str = _ID


class ToolInputStartChunk(BaseModel):
    """A tool call begins."""

    type: Literal["tool-input-start"] = _kind("tool-input-start")
    toolCallId: str = _CALL
    toolName: str = Field(description="Tool name.")
    dynamic: bool | None = _DYNAMIC
    providerExecuted: bool | None = _EXECUTED


class ToolInputDeltaChunk(BaseModel):
    """A piece of a tool call's arguments."""

    type: Literal["tool-input-delta"] = _kind("tool-input-delta")
    toolCallId: str = _CALL
    inputTextDelta: str = Field(description="JSON text to append.")


class ToolInputAvailableChunk(BaseModel):
    """A tool call's final arguments."""

    type: Literal["tool-input-available"] = _kind("tool-input-available")
    toolCallId: str = _CALL
    toolName: str = Field(description="Tool name.")
    input: Any = Field(description="The parsed arguments.")
    dynamic: bool | None = _DYNAMIC
    providerExecuted: bool | None = _EXECUTED


class ToolInputErrorChunk(BaseModel):
    """The model's arguments were not valid JSON: the call never ran."""

    type: Literal["tool-input-error"] = _kind("tool-input-error")
    toolCallId: str = _CALL
    toolName: str = Field(description="Tool name.")
    input: Any = Field(description="The raw argument text.")
    errorText: str = Field(description="What was wrong.")
    dynamic: bool | None = _DYNAMIC
    providerExecuted: bool | None = _EXECUTED


class ToolOutputAvailableChunk(BaseModel):
    """A server tool's result."""

    type: Literal["tool-output-available"] = _kind("tool-output-available")
    toolCallId: str = _CALL
    output: Any = Field(description="The result.")
    dynamic: bool | None = _DYNAMIC
    providerExecuted: bool | None = _EXECUTED


class ToolOutputErrorChunk(BaseModel):
    """A tool call failed (or the run ended before it finished)."""

    type: Literal["tool-output-error"] = _kind("tool-output-error")
    toolCallId: str = _CALL
    errorText: str = Field(description="What went wrong.")
    dynamic: bool | None = _DYNAMIC
    providerExecuted: bool | None = _EXECUTED


class ToolOutputDeniedChunk(BaseModel):
    """A human rejected the call (ai v6+)."""

    type: Literal["tool-output-denied"] = _kind("tool-output-denied")
    toolCallId: str = _CALL


class ToolApprovalRequestChunk(BaseModel):
    """A server tool awaits a human's approval (ai v6+); answer with an approval response."""

    type: Literal["tool-approval-request"] = _kind("tool-approval-request")
    approvalId: str = Field(description="Our approval id.")
    toolCallId: str = _CALL


class ApprovalData(BaseModel):
    """A pending approval as ai v5 gets it, to decide through `/api/approvals/{id}`."""

    approvalId: str = Field(description="The approval id.")
    toolCallId: str = _CALL
    toolName: str = Field(description="Tool name.")
    summary: str = Field(description="What will happen.")
    expiresAt: float | None = Field(description="Unix time the approval lapses.")


class DataApprovalChunk(BaseModel):
    """A pending approval for ai v5 (which has no approval chunk), as a data part."""

    type: Literal["data-approval"] = _kind("data-approval")
    id: str = Field(description="The approval id (the data part's id).")
    data: ApprovalData = Field(description="The approval.")


class ElicitationData(BaseModel):
    """A server tool's question to the user (an MCP elicitation), to answer through
    `POST /api/conversations/{conversationId}/submissions/{toolCallId}`."""

    elicitationId: str = Field(description="The stored question's id.")
    toolCallId: str = _CALL
    toolName: str = Field(description="Tool name.")
    message: str = Field(description="What the tool asks, to show the user.")
    requestedSchema: dict[str, Any] = Field(
        description="JSON schema of the answer's `content` (flat object of primitives)."
    )


class DataElicitationChunk(BaseModel):
    """A server tool waits for the user's answer (every major version: a data part)."""

    type: Literal["data-elicitation"] = _kind("data-elicitation")
    id: str = Field(description="The question's id (the data part's id).")
    data: ElicitationData = Field(description="The question.")


def elicitation_chunk(part: ToolPart) -> DataElicitationChunk | None:
    """The question a waiting tool part holds, as a data part (None when it holds none)."""
    asked = part.data.elicitation
    if asked is None:
        return None
    data = ElicitationData(
        elicitationId=asked.id,
        toolCallId=part.id,
        toolName=part.data.toolName,
        message=asked.message,
        requestedSchema=asked.requestedSchema,
    )
    return DataElicitationChunk(id=asked.id, data=data)


class ErrorChunk(BaseModel):
    """The run failed; the client shows `errorText`."""

    type: Literal["error"] = _kind("error")
    errorText: str = Field(description="What went wrong, safe to show.")


class AbortChunk(BaseModel):
    """The run was stopped (cancelled or interrupted); not an error."""

    type: Literal["abort"] = _kind("abort")
    reason: str | None = _optional("`cancelled` or `interrupted` (ai v6+).")


class FinishChunk(BaseModel):
    """The message is finished."""

    type: Literal["finish"] = _kind("finish")
    finishReason: str = Field(description="stop, tool-calls, length, other or error.")
    messageMetadata: dict[str, Any] = Field(
        description="`{runStatus, usage: {inputTokens, outputTokens, totalTokens, "
        "cachedInputTokens?}, modelCalls, cost?, budget?}` (`budget`: the budget a run "
        "ending `budget_exceeded` went past)."
    )


UIMessageChunk = Annotated[
    StartChunk
    | StartStepChunk
    | FinishStepChunk
    | ResetStepChunk
    | MessageMetadataChunk
    | TextStartChunk
    | TextDeltaChunk
    | TextEndChunk
    | ReasoningStartChunk
    | ReasoningDeltaChunk
    | ReasoningEndChunk
    | ToolInputStartChunk
    | ToolInputDeltaChunk
    | ToolInputAvailableChunk
    | ToolInputErrorChunk
    | ToolOutputAvailableChunk
    | ToolOutputErrorChunk
    | ToolOutputDeniedChunk
    | ToolApprovalRequestChunk
    | DataApprovalChunk
    | DataElicitationChunk
    | ErrorChunk
    | AbortChunk
    | FinishChunk,
    Field(discriminator="type"),
]
UI_CHUNKS_ADAPTER: TypeAdapter[UIMessageChunk] = TypeAdapter(UIMessageChunk)
