"""AIKit history items and Anthropic blocks, each a one-liner so a test shows its point."""

from __future__ import annotations

from typing import Any

from app.domain.messages import MESSAGES_ADAPTER
from app.translate.anthropic.write import messages_to_anthropic


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def assistant(*parts: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": list(parts)}


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "data": {"text": value}}


def thinking(content: str, signature: str | None = None) -> dict[str, Any]:
    return {"type": "thinking", "data": {"content": content, "signature": signature}}


def tool(
    call_id: str, status: str, result: Any = None, args: dict[str, Any] | None = None
) -> dict[str, Any]:
    return {
        "type": "tool",
        "id": call_id,
        "data": {
            "toolName": "weather",
            "toolCallId": call_id,
            "args": {"city": "Paris"} if args is None else args,
            "status": status,
            "result": result,
        },
    }


def block(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def use(call_id: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "type": "tool_use",
        "id": call_id,
        "name": "weather",
        "input": {"city": "Paris"} if args is None else args,
    }


def result(call_id: str, content: str, *, error: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "tool_result", "tool_use_id": call_id, "content": content}
    if error:
        out["is_error"] = True
    return out


def convert(history: list[dict[str, Any]]) -> tuple[str | None, list[dict[str, Any]]]:
    return messages_to_anthropic(MESSAGES_ADAPTER.validate_python(history))
