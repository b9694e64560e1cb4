"""The Chat Completions object for an ended stateless run (`/api/chat` and
`/v1/chat/completions` without streaming).

Only the client's own pending tool calls surface as `tool_calls`: server tools ran inside
the loop, and an OpenAI client that saw them would try to run them itself.
"""

from __future__ import annotations

import time
from typing import Any

from app.api.encoders.chat_chunks import chat_usage, server_tool_call
from app.domain.events import UsageInfo
from app.domain.messages import Message
from app.domain.parts import FINAL_TOOL_STATUSES, Part, ToolPart
from app.runs.handle import RunHandle
from app.translate.openai_chat.write import parts_to_openai_message

FINISH_BY_STATUS = {"max_iterations": "length", "budget_exceeded": "length"}
# A server tool call is reported once it ended, or while it waits for a human.
_REPORTED_TOOL_STATUSES = FINAL_TOOL_STATUSES | {"waitingConfirmation", "waitingSubmission"}


def client_visible_parts(parts: list[Part], client_tools: set[str]) -> list[Part]:
    """Parts an OpenAI-shaped client should see as `tool_calls`: only its own pending ones."""
    return [
        p
        for p in parts
        if not isinstance(p, ToolPart)
        or p.data.status in FINAL_TOOL_STATUSES
        or p.data.toolName in client_tools
    ]


def completion_id(handle: RunHandle) -> str:
    return f"chatcmpl-{handle.run_id.removeprefix('run_')}"


def completion_body(handle: RunHandle, message: Message, client_tools: set[str]) -> dict[str, Any]:
    """The Chat Completions object for a finished stateless run."""
    openai_message, finish = parts_to_openai_message(
        client_visible_parts(message.parts(), client_tools)
    )
    metadata = message.metadata or {}
    if metadata.get("finish_reason") == "length":  # stopped at the output token limit
        finish = "length"
    if metadata.get("finish_reason") == "content_filter":
        # The model declined: OpenAI's clients read that from the finish and `refusal`.
        finish = "content_filter"
        openai_message["refusal"] = str(metadata.get("refusal") or openai_message["content"] or "")
    ran = [
        server_tool_call(p).model_dump(exclude_none=True)
        for p in message.parts()
        if isinstance(p, ToolPart)
        and p.data.toolName not in client_tools
        and p.data.status in _REPORTED_TOOL_STATUSES
    ]
    if ran:
        openai_message["server_tool_calls"] = ran
    usage = UsageInfo.model_validate(metadata.get("usage") or {})
    return {
        "id": completion_id(handle),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": handle.model_id,
        "choices": [
            {
                "index": 0,
                "message": openai_message,
                "finish_reason": FINISH_BY_STATUS.get(handle.status, finish),
                "logprobs": None,
            }
        ],
        "usage": chat_usage(usage).model_dump(),
    }
