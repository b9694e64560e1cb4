"""Chat Completions `messages` as typed request models: a union discriminated on `role`.

Generated clients get a type per role (`SystemMessageIn`, `UserMessageIn`, ...) instead of
`dict`. The models check the shape every client shares and let everything else through
(`extra="allow"`): the readers in `app.translate` still read each message, so the rules
that need more than a shape stay in one place and keep their answers: an identity or
routing field smuggled into a message (`owner_id`, `base_url`, ...) is 422
`forbidden_field`, a bad tool call names the message's index. `/api/chat` also takes
AIKit messages, whose content is typed parts (`{type, data}`), hence `AIKitPartIn` among
the content parts.

`chat_messages(items)` hands the readers the messages as the client sent them: the
fields it set, nothing added.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Open(BaseModel):
    # Fields beyond the shape reach the reader, which refuses identity and routing keys
    # and ignores the rest, as OpenAI's API does with e.g. `name`.
    model_config = ConfigDict(extra="allow")


class TextContent(_Open):
    """OpenAI text content part."""

    type: Literal["text"] = Field(description="Always `text`.")
    text: str = Field(description="The text.")


class RefusalContent(_Open):
    """OpenAI refusal content part (assistant messages); read as text."""

    type: Literal["refusal"] = Field(description="Always `refusal`.")
    refusal: str = Field(description="The refusal text.")


class ImageUrl(_Open):
    """Where an image is: a data URL (or a URL the provider fetches)."""

    url: str = Field(description="`data:image/png;base64,...` or an https URL.")
    detail: str | None = Field(default=None, description="`auto`, `low` or `high`.")


class ImageContent(_Open):
    """OpenAI image content part."""

    type: Literal["image_url"] = Field(description="Always `image_url`.")
    image_url: ImageUrl = Field(description="The image.")


class FileRef(_Open):
    """An OpenAI file content part's file: inline data or an uploaded file's id."""

    file_data: str | None = Field(default=None, description="A data URL of the file.")
    file_id: str | None = Field(default=None, description="Id from `POST /api/files`.")
    filename: str | None = Field(default=None, description="The file's name.")


class FileContent(_Open):
    """OpenAI file content part (`file`), or AIKit's flat attachment (`id`, `name`)."""

    type: Literal["file"] = Field(description="Always `file`.")
    file: FileRef | None = Field(default=None, description="OpenAI's nested file.")


class AIKitPartIn(_Open):
    """An AIKit typed part (`/api/chat` only): text, thinking, tool or file, see `Message`."""

    type: Literal["text", "thinking", "tool", "file"] = Field(description="The part kind.")
    data: dict[str, Any] = Field(description="The part's data, as in `Message` content.")


ContentPart = Annotated[
    TextContent | RefusalContent | ImageContent | FileContent | AIKitPartIn,
    Field(description="A content part: OpenAI's (`text`, `image_url`, `file`) or AIKit's."),
]


class ToolCallFunctionIn(_Open):
    """The function an assistant's tool call names."""

    name: str = Field(description="Tool name.")
    arguments: str | dict[str, Any] = Field(
        default="", description="Arguments as a JSON string (an object is accepted)."
    )


class ToolCallIn(_Open):
    """A tool call the assistant made earlier in the conversation."""

    id: str = Field(description="Tool call id; the tool message answers it.")
    type: Literal["function"] = Field(default="function", description="Always `function`.")
    function: ToolCallFunctionIn = Field(description="Which function, with what arguments.")


class SystemMessageIn(_Open):
    """Instructions for the model."""

    role: Literal["system"] = Field(description="Always `system`.")
    content: str | list[ContentPart] = Field(description="The instructions.")


class DeveloperMessageIn(_Open):
    """Instructions for the model (OpenAI's newer name for `system`)."""

    role: Literal["developer"] = Field(description="Always `developer`.")
    content: str | list[ContentPart] = Field(description="The instructions.")


class UserMessageIn(_Open):
    """What the user said: text, or content parts (text, images, files)."""

    role: Literal["user"] = Field(description="Always `user`.")
    content: str | list[ContentPart] = Field(description="Text or content parts.")


class AssistantMessageIn(_Open):
    """An earlier answer: text (null when it only called tools) and its tool calls."""

    role: Literal["assistant"] = Field(description="Always `assistant`.")
    content: str | list[ContentPart] | None = Field(
        default=None, description="The answer; null or absent with only tool calls."
    )
    tool_calls: list[ToolCallIn] | None = Field(default=None, description="Tools it called.")
    reasoning_content: str | None = Field(default=None, description="Its visible reasoning.")


class ToolMessageIn(_Open):
    """The result of a tool call, answering `tool_call_id`."""

    role: Literal["tool"] = Field(description="Always `tool`.")
    tool_call_id: str = Field(description="The call this answers.")
    content: str | list[ContentPart] = Field(description="The result (JSON text or text).")


ChatMessageIn = Annotated[
    SystemMessageIn | DeveloperMessageIn | UserMessageIn | AssistantMessageIn | ToolMessageIn,
    Field(discriminator="role"),
]


def chat_messages(items: list[ChatMessageIn]) -> list[dict[str, Any]]:
    """The messages as the client sent them (set fields and extra keys), for the readers."""
    return [item.model_dump(exclude_unset=True) for item in items]
