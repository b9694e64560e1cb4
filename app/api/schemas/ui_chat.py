"""The Vercel AI SDK chat request (`DefaultChatTransport`'s body) and what a turn is in it.

`useChat` posts `{id, messages: UIMessage[], trigger, messageId?}`; a client that trims
its request (`prepareSendMessagesRequest`) sends `{id, message}` with only the last one.
The conversation lives on the server, so only the last message matters: a user message
is a new turn, an assistant message carrying approval responses (ai v6/v7
`state: "approval-responded"`) decides those approvals, and `trigger:
"regenerate-message"` answers the last user message again. Earlier messages are the
client's copy of what the server already stores; they are not read.

UI message parts are open-ended (text, file, reasoning, tool-*, data-*, ...): they are
read leniently and only the kinds a turn needs are picked out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    ValidationError,
    model_validator,
)

from app.domain.errors import InvalidRequest
from app.domain.parts import Part, TextData, TextPart

MAX_MESSAGES = 10_000
MAX_PARTS = 1_000


class UIMessageIn(BaseModel):
    """A UI message as the `ai` package keeps it (`{id, role, parts, metadata?}`)."""

    model_config = ConfigDict(extra="ignore")
    id: str = Field(default="", max_length=256, description="The client's message id.")
    role: Literal["system", "user", "assistant"] = Field(description="Who wrote it.")
    parts: list[dict[str, Any]] = Field(
        max_length=MAX_PARTS, description="UI message parts (text, tool-*, ...)."
    )
    metadata: Any | None = Field(default=None, description="The client's message metadata.")


class UIChatRequest(BaseModel):
    """What `DefaultChatTransport` posts (plus an optional `model`)."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "id": "chat-1",
                    "trigger": "submit-message",
                    "messages": [
                        {"id": "m1", "role": "user", "parts": [{"type": "text", "text": "Hi"}]}
                    ],
                }
            ]
        },
    )
    id: str = Field(
        min_length=1,
        max_length=256,
        description="The chat id; maps to a durable conversation of the caller (a "
        "`conv_...` id names one of the caller's conversations as it is).",
    )
    messages: list[UIMessageIn] | None = Field(
        default=None, max_length=MAX_MESSAGES, description="The chat's messages; the last is read."
    )
    message: UIMessageIn | None = Field(
        default=None, description="Only the last message (instead of `messages`)."
    )
    trigger: Literal["submit-message", "regenerate-message"] = Field(
        default="submit-message", description="What the client asks for."
    )
    messageId: str | None = Field(
        default=None, max_length=256, description="The message to regenerate (ignored: the last)."
    )
    model: str | None = Field(default=None, max_length=255, description="Model id for this turn.")

    @model_validator(mode="after")
    def _one_last_message(self) -> UIChatRequest:
        if self.trigger == "submit-message" and not (self.messages or self.message):
            raise ValueError("send `messages` (or `message`) with at least one message")
        return self

    def last(self) -> UIMessageIn | None:
        if self.message is not None:
            return self.message
        return self.messages[-1] if self.messages else None


class _Approval(BaseModel):
    model_config = ConfigDict(extra="ignore")
    id: str = Field(min_length=1, max_length=256)
    approved: StrictBool
    reason: str | None = Field(default=None, max_length=4000)


class _ToolPartIn(BaseModel):
    model_config = ConfigDict(extra="ignore")
    toolCallId: str = Field(min_length=1, max_length=256)
    state: str
    approval: _Approval | None = None


@dataclass(frozen=True)
class ApprovalAnswer:
    """The client's claim that a human decided an approval; checked like any decision."""

    approval_id: str
    tool_call_id: str | None  # when set, the approval must be this call's
    approved: bool
    reason: str | None


def user_content(message: UIMessageIn) -> list[Part]:
    """The text of a user message as typed parts (other part kinds are not read)."""
    parts: list[Part] = [
        TextPart(data=TextData(text=p["text"]))
        for p in message.parts
        if p.get("type") == "text" and isinstance(p.get("text"), str)
    ]
    if not any(isinstance(p, TextPart) and p.data.text.strip() for p in parts):
        raise InvalidRequest("The user message has no text.", param="messages")
    return parts


def approval_answers(message: UIMessageIn) -> list[ApprovalAnswer]:
    """The approval responses in an assistant message (ai v6/v7 tool parts)."""
    answers: list[ApprovalAnswer] = []
    for raw in message.parts:
        kind = raw.get("type")
        if not isinstance(kind, str) or not (kind.startswith("tool-") or kind == "dynamic-tool"):
            continue
        if raw.get("state") != "approval-responded":
            continue
        try:
            part = _ToolPartIn.model_validate(raw)
        except ValidationError as exc:
            raise InvalidRequest(
                f"A tool part's approval response is malformed: {exc.errors()[0]['msg']}",
                param="messages",
            ) from None
        if part.approval is None:
            raise InvalidRequest("An approval response names no approval.", param="messages")
        answers.append(
            ApprovalAnswer(
                part.approval.id, part.toolCallId, part.approval.approved, part.approval.reason
            )
        )
    return answers
