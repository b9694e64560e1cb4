"""Write our messages, tools and answers in OpenAI Chat Completions' shape.

Two readers get what this writes: an OpenAI-compatible model (the request's `messages`,
`tools` and `tool_choice`, from the provider) and an OpenAI client of ours (the
`choices[0].message` of a non-streaming answer). Our assistant message keeps each tool
call and its result in one tool part; OpenAI wants the calls on an assistant message and
every result in a `role: "tool"` message after it (its content is `tool_results`'s), so
the parts are expanded here, and a history sent upstream always answers every call.
"""

from __future__ import annotations

from typing import Any, assert_never

from app.domain.messages import Message
from app.domain.parts import (
    FINAL_TOOL_STATUSES,
    FileData,
    FilePart,
    Part,
    TextPart,
    ThinkingPart,
    ToolPart,
)
from app.domain.stream import FinishReason, ToolChoice, ToolSpec
from app.translate.openai_chat.tool_results import canonical_json, tool_result_content


def messages_to_openai(messages: list[Message]) -> list[dict[str, Any]]:
    """Our messages as a valid Chat Completions history (every tool call answered)."""
    out: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "system":
            out.append({"role": "system", "content": message.text()})
        elif message.role == "user":
            out.append({"role": "user", "content": _user_to_openai(message)})
        elif message.role == "assistant":
            out.extend(_assistant_to_openai(message.parts()))
        else:
            assert_never(message.role)
    return out


def _user_to_openai(message: Message) -> str | list[dict[str, Any]]:
    if isinstance(message.content, str):
        return message.content
    items: list[dict[str, Any]] = []
    for part in message.content:
        if isinstance(part, TextPart):
            items.append({"type": "text", "text": part.data.text})
        elif isinstance(part, FilePart):
            items.append(_file_to_openai(part.data))
        elif isinstance(part, ThinkingPart | ToolPart):
            continue  # not something a user message can carry upstream
        else:
            assert_never(part)
    if all(i["type"] == "text" for i in items) and len(items) <= 1:
        return items[0]["text"] if items else ""
    return items


def _file_to_openai(data: FileData) -> dict[str, Any]:
    mime = data.mimeType or ""
    if data.url and (mime.startswith("image/") or data.url.startswith("data:image/")):
        return {"type": "image_url", "image_url": {"url": data.url}}
    if data.url and data.url.startswith("data:"):
        return {"type": "file", "file": {"filename": data.name, "file_data": data.url}}
    # Without inline bytes the model can only be told the attachment exists.
    return {"type": "text", "text": f"[Attached file: {data.name}]"}


def _assistant_to_openai(parts: list[Part]) -> list[dict[str, Any]]:
    """[text, tool, tool, text] -> assistant+tool_calls, tool, tool, assistant.

    A new assistant message starts whenever text follows tool calls: that is how the
    exchange really went (the second text was written after the results came back).
    """
    out: list[dict[str, Any]] = []
    texts: list[str] = []
    calls: list[ToolPart] = []

    def flush() -> None:
        if not "".join(texts) and not calls:
            texts.clear()  # an empty assistant message is invalid upstream
            return
        message: dict[str, Any] = {"role": "assistant", "content": "".join(texts) or None}
        if calls:
            message["tool_calls"] = [_tool_call_to_openai(p) for p in calls]
        out.append(message)
        out.extend(
            {"role": "tool", "tool_call_id": p.id, "content": tool_result_content(p.data)}
            for p in calls
        )
        texts.clear()
        calls.clear()

    for part in parts:
        if isinstance(part, TextPart):
            if calls:
                flush()
            texts.append(part.data.text)
        elif isinstance(part, ToolPart):
            calls.append(part)
        elif isinstance(part, ThinkingPart | FilePart):
            continue  # OpenAI takes no reasoning back, and assistants attach no files
        else:
            assert_never(part)
    flush()
    return out


def _tool_call_to_openai(part: ToolPart) -> dict[str, Any]:
    return {
        "id": part.id,
        "type": "function",
        "function": {"name": part.data.toolName, "arguments": canonical_json(part.data.args or {})},
    }


# --- tools -------------------------------------------------------------------------------


def tools_to_openai(tools: list[ToolSpec]) -> list[dict[str, Any]]:
    """Tool specs as OpenAI function tools."""
    return [
        {
            "type": "function",
            "function": {
                "name": t.name,
                "description": t.description,
                "parameters": t.parameters,
            },
        }
        for t in tools
    ]


def tool_choice_to_openai(choice: ToolChoice | None) -> str | dict[str, Any] | None:
    """None means "send nothing" (the upstream default)."""
    if choice is None or isinstance(choice, str):
        return choice
    return {"type": "function", "function": {"name": choice.name}}


# --- our answer -> OpenAI ----------------------------------------------------------------


def parts_to_openai_message(parts: list[Part]) -> tuple[dict[str, Any], FinishReason]:
    """`choices[0].message` for an answer we produced, and its finish reason.

    Only tool calls still waiting on the client become `tool_calls`: server tools that
    already ran are ours, and an OpenAI client seeing them would try to run them itself.
    Text runs separated by such finished calls are joined with a blank line.
    """
    segments: list[str] = []
    current: list[str] = []
    pending: list[ToolPart] = []
    for part in parts:
        if isinstance(part, TextPart):
            current.append(part.data.text)
        elif isinstance(part, ToolPart):
            if current:
                segments.append("".join(current))
                current = []
            if part.data.status not in FINAL_TOOL_STATUSES:
                pending.append(part)
        elif isinstance(part, ThinkingPart | FilePart):
            continue
        else:
            assert_never(part)
    if current:
        segments.append("".join(current))
    text = "\n\n".join(s for s in segments if s)
    message: dict[str, Any] = {"role": "assistant", "content": text or None, "refusal": None}
    if pending:
        message["tool_calls"] = [_tool_call_to_openai(p) for p in pending]
        return message, "tool_calls"
    return message, "stop"
