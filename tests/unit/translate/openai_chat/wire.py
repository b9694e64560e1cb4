"""Chat Completions wire values, each a one-liner so a test shows its point."""

from __future__ import annotations

from typing import Any

from app.domain.messages import Message
from app.domain.parts import ToolPart, tool_part


def call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def assistant_calls(*calls: dict[str, Any], content: str | None = None) -> dict[str, Any]:
    return {"role": "assistant", "content": content, "tool_calls": list(calls)}


def tool_msg(call_id: str, content: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": content}


def only_tool(messages: list[Message]) -> ToolPart:
    (part,) = [p for m in messages for p in m.tool_parts()]
    return part


def without_ids(messages: list[Message]) -> list[dict[str, Any]]:
    return [m.model_dump(exclude={"id"}) for m in messages]


def success(call_id: str, name: str, args: dict[str, Any], result: Any) -> ToolPart:
    return tool_part(
        tool_call_id=call_id, tool_name=name, status="success", args=args, result=result
    )


def chunk(
    delta: dict[str, Any] | None = None, finish: str | None = None, **extra: Any
) -> dict[str, Any]:
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    return {
        "id": "chatcmpl-1",
        "model": "gpt-x",
        "object": "chat.completion.chunk",
        "choices": choices,
        **extra,
    }
