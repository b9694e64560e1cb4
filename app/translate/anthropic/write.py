"""Write our history, tools and tool choice as an Anthropic Messages request. Pure functions.

The work is in the shape of the history. Our assistant message keeps a tool call and its
result together in one tool part; Anthropic wants the call as a `tool_use` block in an
assistant turn and the result as a `tool_result` block at the start of the *next* user
turn, and it wants user and assistant turns to alternate, starting with the user.
`messages_to_anthropic` expands and merges accordingly, so what is sent is always a
conversation Anthropic accepts, whatever state the tool calls are in.
"""

from __future__ import annotations

import json
from typing import Any, Literal, assert_never

from app.domain.errors import InvalidRequest
from app.domain.messages import Message
from app.domain.parts import (
    FINAL_TOOL_STATUSES,
    FilePart,
    Part,
    TextPart,
    ThinkingPart,
    ToolPart,
)
from app.domain.stream import NamedToolChoice, ToolChoice, ToolSpec

Block = dict[str, Any]
AnthropicRole = Literal["user", "assistant"]

CANCELLED_RESULT = "The tool call was cancelled by the user; the tool did not run."
PENDING_RESULT = (
    "No result yet: the tool call was still pending (status `{status}`) when this request "
    "was made, so the tool has not returned anything."
)
ERROR_RESULT = "The tool failed without saying why."
EMPTY_RESULT = "(the tool returned nothing)"
# A conversation that opens with the assistant (a greeting the UI showed) gets this user
# turn in front of it: Anthropic wants the user first, and the greeting is context the
# user saw, so it is kept rather than dropped.
OPENING_USER_TEXT = "(The conversation begins with the assistant's message that follows.)"


def messages_to_anthropic(messages: list[Message]) -> tuple[str | None, list[dict[str, Any]]]:
    """Our history as Anthropic's `(system, messages)`.

    - System messages are lifted out and joined (blank line between) into the system prompt.
    - Consecutive turns of one role are merged into one turn with several blocks.
    - A history that opens with the assistant gets `OPENING_USER_TEXT` as a first user turn.
    - Tool results go as `tool_result` blocks first in the following user turn, one per
      `tool_use`; a tool part that is not final yet gets an `is_error` "no result yet"
      result, so the history sent is always valid (a dangling `tool_use` is refused).
    - Empty or blank text is never sent (Anthropic refuses empty text blocks).
    """
    system: list[str] = []
    turns: list[tuple[AnthropicRole, list[Block]]] = []
    for message in messages:
        if message.role == "system":
            text = message.text()
            if text.strip():
                system.append(text)
        elif message.role == "user":
            turns.append(("user", _user_blocks(message.parts())))
        else:
            turns.extend(_assistant_turns(message.parts()))
    merged = _merge(turns)
    if merged and merged[0]["role"] == "assistant":
        merged.insert(0, {"role": "user", "content": [_text_block(OPENING_USER_TEXT)]})
    return ("\n\n".join(system) if system else None), merged


def _text_block(text: str) -> Block:
    return {"type": "text", "text": text}


def _user_blocks(parts: list[Part]) -> list[Block]:
    blocks: list[Block] = []
    for part in parts:
        if isinstance(part, TextPart):
            if part.data.text.strip():
                blocks.append(_text_block(part.data.text))
        elif isinstance(part, FilePart):
            blocks.append(_file_block(part))
        elif isinstance(part, ThinkingPart):
            # Reasoning is the model's own; a user message carrying some (a UI echoing
            # parts back) has nothing Anthropic could take from it.
            continue
        elif isinstance(part, ToolPart):
            raise InvalidRequest(
                "A user message contains a tool part; tool calls and their results belong "
                "to the assistant message that made the call."
            )
        else:
            assert_never(part)
    return blocks


def _file_block(part: FilePart) -> Block:
    """Images and PDFs by URL; anything else as a note, since Anthropic cannot fetch it."""
    data = part.data
    mime = data.mimeType or ""
    if data.url and data.url.startswith("data:image/") and ";base64," in data.url:
        # Anthropic takes inline images as base64 sources, not as data URLs.
        header, _, payload = data.url.partition(",")
        media_type = header[5:].split(";", 1)[0]
        return {
            "type": "image",
            "source": {"type": "base64", "media_type": media_type, "data": payload},
        }
    if data.url and mime.startswith("image/"):
        return {"type": "image", "source": {"type": "url", "url": data.url}}
    if data.url and mime == "application/pdf":
        return {"type": "document", "source": {"type": "url", "url": data.url}}
    return _text_block(f"[attached file: {data.name}{f' ({mime})' if mime else ''}]")


def _assistant_turns(parts: list[Part]) -> list[tuple[AnthropicRole, list[Block]]]:
    """One assistant message -> assistant turn(s), each followed by its tool results.

    Text or thinking after tool parts was produced by a later model call, after the
    results came back, so it opens a new assistant turn after the results' user turn.
    """
    turns: list[tuple[AnthropicRole, list[Block]]] = []
    blocks: list[Block] = []
    results: list[Block] = []

    def flush() -> None:
        nonlocal blocks, results
        turns.append(("assistant", blocks))
        if results:
            turns.append(("user", results))
        blocks, results = [], []

    for part in parts:
        if isinstance(part, ToolPart):
            blocks.append(
                {
                    "type": "tool_use",
                    "id": part.data.toolCallId,
                    "name": part.data.toolName,
                    # Arguments that never parsed are sent as {}; the error result says why.
                    "input": part.data.args or {},
                }
            )
            results.append(tool_result_block(part))
            continue
        if results:
            flush()
        if isinstance(part, TextPart):
            if part.data.text.strip():
                blocks.append(_text_block(part.data.text))
        elif isinstance(part, ThinkingPart):
            # Anthropic verifies thinking by its signature and refuses unsigned thinking;
            # without one the content was only for display and stays behind.
            if part.data.signature:
                blocks.append(
                    {
                        "type": "thinking",
                        "thinking": part.data.content,
                        "signature": part.data.signature,
                    }
                )
        elif isinstance(part, FilePart):
            blocks.append(_file_block(part))
        else:
            assert_never(part)
    flush()
    return turns


def tool_result_block(part: ToolPart) -> Block:
    """The `tool_result` for a tool part, whatever its status (see `messages_to_anthropic`)."""
    data = part.data
    block: Block = {"type": "tool_result", "tool_use_id": data.toolCallId}
    if data.status == "success":
        block["content"] = _result_text(data.result) or EMPTY_RESULT
    elif data.status == "error":
        block["content"] = _result_text(data.result) or data.bodyContent or ERROR_RESULT
        block["is_error"] = True
    elif data.status == "cancelled":
        block["content"] = CANCELLED_RESULT
        block["is_error"] = True
    else:
        assert data.status not in FINAL_TOOL_STATUSES
        block["content"] = PENDING_RESULT.format(status=data.status)
        block["is_error"] = True
    return block


def _result_text(result: Any) -> str:
    if result is None:
        return ""
    if isinstance(result, str):
        return result
    return json.dumps(result, ensure_ascii=False, default=str)


def _merge(turns: list[tuple[AnthropicRole, list[Block]]]) -> list[dict[str, Any]]:
    merged: list[dict[str, Any]] = []
    for role, blocks in turns:
        if not blocks:
            continue
        if merged and merged[-1]["role"] == role:
            merged[-1]["content"].extend(blocks)
        else:
            merged.append({"role": role, "content": list(blocks)})
    return merged


def tools_to_anthropic(tools: list[ToolSpec]) -> list[dict[str, Any]]:
    """Tool specs as Anthropic tool definitions (`input_schema` is the JSON schema)."""
    out: list[dict[str, Any]] = []
    for tool in tools:
        definition: dict[str, Any] = {"name": tool.name, "input_schema": tool.parameters}
        if tool.description:
            definition["description"] = tool.description
        out.append(definition)
    return out


def tool_choice_to_anthropic(
    choice: ToolChoice | None, *, parallel_tool_calls: bool | None = None
) -> dict[str, Any] | None:
    """OpenAI-style tool choice as Anthropic's; `required` is Anthropic's `any`.

    `parallel_tool_calls=False` becomes `disable_parallel_tool_use` (with `auto` when no
    choice was given); None means Anthropic's own default.
    """
    result: dict[str, Any]
    if choice is None:
        if parallel_tool_calls is not False:
            return None
        result = {"type": "auto"}
    elif isinstance(choice, NamedToolChoice):
        result = {"type": "tool", "name": choice.name}
    elif choice == "none":
        return {"type": "none"}
    elif choice == "required":
        result = {"type": "any"}
    else:
        result = {"type": "auto"}
    if parallel_tool_calls is False:
        result["disable_parallel_tool_use"] = True
    return result
