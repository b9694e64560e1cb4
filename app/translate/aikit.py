"""Read `/api/chat` histories that mix AIKit messages and OpenAI Chat Completions messages.

AIKit's reference chat posts OpenAI messages; an AIKit client that keeps typed parts posts
`{id?, role, content: string | [{type, data}], metadata?}`. A browser may even send both
in one history (its own typed assistant message followed by a `role: "tool"` result), so
the format is decided message by message and both feed the same list: a tool result
folds into the matching tool part whichever format that part came in.

How a message is recognised:
- OpenAI: `role` `tool` or `developer`, a `tool_calls` key, or content parts without `data`
  (`{type: "text", text}`, `{type: "image_url", ...}`);
- AIKit: content parts that all carry `data`;
- a plain string content reads the same either way; its `id` and `metadata` are kept.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from app.domain.errors import InvalidRequest
from app.domain.messages import Message
from app.translate.openai_chat.read import append_openai_message, refuse_routing_fields

_AIKIT_ROLES = frozenset({"user", "assistant", "system"})


def messages_from_wire(items: list[dict[str, Any]]) -> list[Message]:
    """The request's `messages`, each read as AIKit or OpenAI; InvalidRequest names the index."""
    if not isinstance(items, list):
        raise InvalidRequest("messages must be an array.", param="messages")
    out: list[Message] = []
    for index, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise InvalidRequest(
                f"messages[{index}] must be an object.", param=f"messages[{index}]"
            )
        refuse_routing_fields(item, f"messages[{index}]")
        if _is_aikit(item, index):
            out.append(_aikit_message(item, index))
        else:
            append_openai_message(out, item, index=index)
    return out


def _is_aikit(item: Mapping[str, Any], index: int) -> bool:
    if item.get("role") not in _AIKIT_ROLES or "tool_calls" in item:
        return False
    content = item.get("content")
    if isinstance(content, str):
        return True
    if not isinstance(content, list) or not content:
        return False
    typed = [isinstance(p, Mapping) and ("data" in p or _flat_file(p)) for p in content]
    if all(typed):
        return True
    if any(typed):
        raise InvalidRequest(
            f"messages[{index}] mixes AIKit parts ({{type, data}}) with OpenAI content parts.",
            param=f"messages[{index}]",
        )
    return False


def _flat_file(part: Mapping[str, Any]) -> bool:
    """AIKit's attachment as it travels: `{type: "file", id | fileId, name, mediaType}`
    (an OpenAI file part nests its fields under `file` instead)."""
    return part.get("type") == "file" and "file" not in part and ("id" in part or "fileId" in part)


def _aikit_message(item: Mapping[str, Any], index: int) -> Message:
    payload = dict(item)
    if isinstance(payload["content"], list):
        payload["content"] = [_with_tool_id(p) for p in payload["content"]]
    try:
        return Message.model_validate(payload)
    except ValidationError as exc:
        # The deepest error is the useful one (the others are union branches not taken).
        first = max(exc.errors(), key=lambda e: len(e["loc"]))
        where = ".".join(str(x) for x in first["loc"] if "[" not in str(x))
        raise InvalidRequest(
            f"messages[{index}] is not a valid AIKit message: {where}: {first['msg']}.",
            param=f"messages[{index}]",
        ) from None


def _with_tool_id(part: Mapping[str, Any]) -> Mapping[str, Any]:
    """AIKit tool parts may omit the part id; it is the tool call id by definition."""
    data = part.get("data")
    if part.get("type") == "tool" and "id" not in part and isinstance(data, Mapping):
        return {**part, "id": data.get("toolCallId")}
    return part
