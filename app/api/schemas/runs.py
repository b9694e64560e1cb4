"""DTOs of conversation runs: send, events, cancel, tool results, regenerate, edit."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, field_validator

from app.api.schemas.chat import ClientTool
from app.domain.events import RunStatus
from app.domain.parts import FilePart, Part, TextPart


def require_content(content: str | list[Part]) -> str | list[Part]:
    """A message must say something: blank text (or parts that hold nothing but blank
    text) would send the model an empty turn."""
    if isinstance(content, str):
        if not content.strip():
            raise ValueError("content must not be empty or only whitespace")
        return content
    if not any(
        isinstance(p, FilePart) or (isinstance(p, TextPart) and p.data.text.strip())
        for p in content
    ):
        raise ValueError("content must hold some text or a file")
    return content


class SendMessage(BaseModel):
    """A user message that starts a run."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {"content": "Hello!"},
                {"content": [{"type": "text", "data": {"text": "Hi"}}], "stream": True},
            ]
        },
    )
    content: str | list[Part] = Field(description="Text, or typed parts (text, file).")
    tools: list[ClientTool] | None = Field(
        default=None, description="Client tools the browser runs (OpenAI function shape)."
    )
    tool_choice: str | dict[str, Any] | None = Field(
        default=None, description="`auto`, `none`, `required` or a named function."
    )
    model: str | None = Field(default=None, description="Model id for this turn.")
    stream: StrictBool = Field(default=False, description="Answer as native SSE instead of 202.")

    _content = field_validator("content")(require_content)


class EditMessage(BaseModel):
    """New content for the last user message; the conversation is answered again."""

    model_config = ConfigDict(extra="forbid")
    content: str | list[Part] = Field(description="The new text or parts.")
    model: str | None = Field(default=None, description="Model id for the rerun.")
    stream: StrictBool = Field(default=False, description="Answer as native SSE instead of 202.")

    _content = field_validator("content")(require_content)


class Regenerate(BaseModel):
    """Options for answering the last user message again."""

    model_config = ConfigDict(extra="forbid")
    model: str | None = Field(default=None, description="Model id for the new answer.")
    stream: StrictBool = Field(default=False, description="Answer as native SSE instead of 202.")


class RunStarted(BaseModel):
    """A run started in the background; follow it by its events URL."""

    run_id: str = Field(description="The run now answering.")
    events_url: str = Field(description="GET it (EventSource) to follow the run.")
    truncated_input: bool = Field(
        default=False, description="True when a very long message was cut to fit."
    )
    stream_token: str | None = Field(
        default=None,
        description="A short-lived token for this run's events, for EventSource (which "
        "cannot send headers): open `events_url?token=<stream_token>`. Null when "
        "authentication is off.",
    )


class RunState(BaseModel):
    """Where a run stands after a cancel request."""

    run_id: str = Field(description="The run.")
    status: RunStatus = Field(description="Where the run stands.")


class ToolResultIn(BaseModel):
    """One client tool's outcome, as AIKit's submitResult sends it."""

    model_config = ConfigDict(extra="forbid")
    toolCallId: str = Field(description="The tool call this answers.")
    status: Literal["success", "error", "cancelled"] = Field(description="Outcome.")
    result: Any = Field(default=None, description="The result (any JSON).")


class ToolResultsIn(BaseModel):
    """Results of client tools (AIKit submitResult), wrapped so the body can grow."""

    model_config = ConfigDict(extra="forbid")
    results: list[ToolResultIn] = Field(min_length=1, description="One per answered call.")
    stream: StrictBool = Field(default=False, description="Answer as native SSE instead of 202.")


class ToolResultsOut(BaseModel):
    """Whether the conversation continued after client tool results."""

    run_id: str | None = Field(description="The continuation run, once nothing waits.")
    events_url: str | None = Field(description="Where to follow it.")
    waiting: bool = Field(description="True when other tool calls still wait for results.")
