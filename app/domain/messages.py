"""Messages: `{id, role, content: str | Part[], metadata?}` as AIKit holds them.

Tool results do not get messages of their own: they live in the assistant message's tool
parts (status + result). The translators expand them into vendor shapes (`role: "tool"`
messages for OpenAI, `tool_result` blocks for Anthropic) and fold them back.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from app.domain.ids import uuid4_hex
from app.domain.parts import Part, TextPart, ToolPart

Role = Literal["user", "assistant", "system"]
MESSAGE_SCHEMA_VERSION = 1


def new_message_id() -> str:
    return f"msg_{uuid4_hex()}"


class Message(BaseModel):
    """One chat message in AIKit's shape."""

    model_config = ConfigDict(extra="ignore")

    id: str = Field(default_factory=new_message_id, description="Message id.")
    role: Role = Field(description="Who wrote it.")
    content: str | list[Part] = Field(description="Plain text or typed parts.")
    metadata: dict[str, Any] | None = Field(
        default=None, description="Free-form metadata (status, usage, model, ...)."
    )

    def parts(self) -> list[Part]:
        """The content as parts (a plain string becomes one text part)."""
        if isinstance(self.content, str):
            return [TextPart.model_validate({"data": {"text": self.content}})]
        return list(self.content)

    def text(self) -> str:
        """All text parts joined; what a title or a preview is made from."""
        if isinstance(self.content, str):
            return self.content
        return "".join(p.data.text for p in self.content if isinstance(p, TextPart))

    def tool_parts(self) -> list[ToolPart]:
        return [p for p in self.parts() if isinstance(p, ToolPart)]


MESSAGES_ADAPTER: TypeAdapter[list[Message]] = TypeAdapter(list[Message])
