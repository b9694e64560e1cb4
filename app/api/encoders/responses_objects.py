"""The objects of the OpenAI Responses wire: the Response, its output items, usage, errors.

Kept apart from the encoder (`responses.py`), which decides *when* an item is added or
done; this module only knows what each object looks like, field for field as the openai
SDK types them, so both the streamed frames and the non-streaming answer carry the same
objects.

How our parts map to output items, and why:

- text -> a `message` item with one `output_text` part;
- thinking -> a `reasoning` item whose text is a `reasoning_text` content part (the SDK's
  accumulator and AIKit both fold it from the item's `output_item.done`);
- client tools (declared in the request's `tools`) -> `function_call` items, the calls the
  client must run itself;
- server tools (ran inside our loop) -> `mcp_call` items with `server_label: "chat-bff"`,
  the Responses shape for a tool the server already executed, so an SDK client never tries
  to run them itself. A result is `output` as text; a failure is `status: failed` with the
  message in `output` too, because AIKit only shows string errors and the SDK types
  `error` as an object. A call awaiting a human's approval carries `approval_request_id`;
- an approval -> an `mcp_approval_request` item (AIKit: a `waitingConfirmation` card).

An item as first announced (`output_item.added`) has no content, output or error yet.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal, assert_never

SERVER_LABEL = "chat-bff"
ItemKind = Literal["message", "reasoning", "function_call", "mcp_call", "mcp_approval_request"]
_RATE_LIMIT_CODES = frozenset({"rate_limited", "rate_limit_exceeded"})


def dumps(value: Any) -> str:
    """Compact JSON, the spelling of every frame and of arguments we settle."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def result_text(value: Any) -> str:
    """A tool result as the string the Responses wire carries."""
    if value is None:
        return ""
    return value if isinstance(value, str) else dumps(value)


@dataclass
class OutputItem:
    """One output item as the encoder builds it up; `wire` is its JSON at this moment."""

    index: int
    kind: ItemKind
    id: str
    name: str = ""
    call_id: str = ""
    text: str = ""  # message text, reasoning text, or arguments
    status: str = "in_progress"
    output: str | None = None
    error: dict[str, Any] | None = None
    approval_request_id: str | None = None
    dropped: bool = False

    def wire(self, *, added: bool = False) -> dict[str, Any]:
        text = "" if added else self.text
        if self.kind == "message":
            content = [] if added else [output_text(text)]
            return {
                "id": self.id,
                "type": "message",
                "role": "assistant",
                "status": self.status,
                "content": content,
            }
        if self.kind == "reasoning":
            reasoning = [] if added else [{"type": "reasoning_text", "text": text}]
            return {
                "id": self.id,
                "type": "reasoning",
                "summary": [],
                "content": reasoning,
                "status": self.status,
            }
        if self.kind == "function_call":
            return {
                "id": self.id,
                "type": "function_call",
                "call_id": self.call_id,
                "name": self.name,
                "arguments": text,
                "status": self.status,
            }
        if self.kind == "mcp_call":
            return {
                "id": self.id,
                "type": "mcp_call",
                "name": self.name,
                "server_label": SERVER_LABEL,
                "arguments": text,
                "status": self.status,
                "output": None if added else self.output,
                "error": None if added else self.error,
                "approval_request_id": None if added else self.approval_request_id,
            }
        if self.kind == "mcp_approval_request":
            return {
                "id": self.id,
                "type": "mcp_approval_request",
                "name": self.name,
                "server_label": SERVER_LABEL,
                "arguments": self.text,
            }
        assert_never(self.kind)


def output_text(text: str) -> dict[str, Any]:
    """The `output_text` content part of a finished message item."""
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


def response_object(
    *,
    response_id: str,
    model: str,
    created_at: int,
    request: dict[str, Any],
    status: str,
    **extra: Any,
) -> dict[str, Any]:
    """The Response object; `request` holds what it echoes back, `extra` overrides fields.

    Echoed: instructions, tools in Responses shape, tool_choice, temperature,
    max_output_tokens, metadata, parallel_tool_calls.
    """
    body: dict[str, Any] = {
        "id": response_id,
        "object": "response",
        "created_at": created_at,
        "status": status,
        "error": None,
        "incomplete_details": None,
        "instructions": request.get("instructions"),
        "max_output_tokens": request.get("max_output_tokens"),
        "metadata": request.get("metadata") or {},
        "model": model,
        "output": [],
        "parallel_tool_calls": request.get("parallel_tool_calls", True),
        "previous_response_id": None,
        "temperature": request.get("temperature"),
        "text": {"format": {"type": "text"}},
        "tool_choice": request.get("tool_choice") or "auto",
        "tools": request.get("tools") or [],
        "top_p": None,
        "truncation": "disabled",
        "usage": None,
    }
    body.update(extra)
    return body


def usage_object(input_tokens: int, output_tokens: int) -> dict[str, Any]:
    """A terminal Response's `usage` (we count no cached or reasoning tokens apart)."""
    return {
        "input_tokens": input_tokens,
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens": output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": input_tokens + output_tokens,
    }


def stream_error_object(code: str, message: str) -> dict[str, Any]:
    """A failed Response's `error` for an error the run streamed (its code kept as `type`).

    OpenAI names only two error codes a client can act on here: a rate limit, and the rest.
    """
    kind = "rate_limit_exceeded" if code in _RATE_LIMIT_CODES else "server_error"
    return {"code": kind, "message": message, "type": code}


def run_error_object(error: dict[str, Any] | None) -> dict[str, Any]:
    """A failed Response's `error` when the run ended failed without streaming an error."""
    return {
        "code": "server_error",
        "message": str((error or {}).get("message") or "The run failed."),
        "type": str((error or {}).get("code") or "internal_error"),
    }
