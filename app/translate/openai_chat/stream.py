"""Read an OpenAI Chat Completions stream: each `chat.completion.chunk` -> provider events.

The provider parses each SSE chunk and hands it here; the events go on to the parts
builder, which keys tool-call pieces by the chunk's `tool_calls[].index`. OpenAI-compatible
servers differ in small ways (a `reasoning` field, arguments as an object, no index, an
unknown finish reason), and each is read here so the rest of the service never sees them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from app.domain.stream import (
    Finish,
    FinishReason,
    ProviderEvent,
    ResponseMeta,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    Usage,
)

_FINISH_REASONS: dict[str, FinishReason] = {
    "stop": "stop",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "length": "length",
    "content_filter": "content_filter",
}


def chunk_to_events(chunk: Any, *, first: bool = False) -> list[ProviderEvent]:
    """One `chat.completion.chunk` (SDK object or dict) as provider events.

    `first` adds the ResponseMeta; the caller knows which chunk came first. Only choice 0
    is read: we never ask for `n > 1`.
    """
    data = _as_dict(chunk)
    events: list[ProviderEvent] = []
    if first:
        events.append(ResponseMeta(response_id=data.get("id"), model=data.get("model")))
    for choice in data.get("choices") or []:
        if choice.get("index", 0) != 0:
            continue
        delta = choice.get("delta") or {}
        for key in ("reasoning_content", "reasoning"):
            if delta.get(key):
                events.append(ThinkingDelta(text=delta[key]))
        if delta.get("content"):
            events.append(TextDelta(text=delta["content"]))
        if delta.get("refusal"):
            events.append(TextDelta(text=delta["refusal"]))
        for position, call in enumerate(delta.get("tool_calls") or []):
            index = call.get("index")
            events.append(_call_delta(position if index is None else index, call))
        if choice.get("finish_reason"):
            events.append(Finish(reason=finish_reason_from_openai(choice["finish_reason"])))
    if data.get("usage"):
        events.append(_usage(data["usage"]))
    return events


def finish_reason_from_openai(value: str) -> FinishReason:
    """Unknown reasons from compatible servers (e.g. `eos`) read as a normal stop."""
    return _FINISH_REASONS.get(value, "stop")


def _as_dict(obj: Any) -> dict[str, Any]:
    if isinstance(obj, dict):
        return obj
    dump = getattr(obj, "model_dump", None)
    if dump is None:
        raise TypeError(f"expected a dict or a pydantic model, got {type(obj).__name__}")
    result: dict[str, Any] = dump()
    return result


def _usage(usage: Mapping[str, Any]) -> Usage:
    details = usage.get("prompt_tokens_details") or {}
    return Usage(
        input_tokens=int(usage.get("prompt_tokens") or 0),
        output_tokens=int(usage.get("completion_tokens") or 0),
        cached_tokens=int(details.get("cached_tokens") or 0) if isinstance(details, dict) else 0,
    )


def _call_delta(index: int, call: Mapping[str, Any]) -> ToolCallDelta:
    function = call.get("function") or {}
    arguments = function.get("arguments") or ""
    if not isinstance(arguments, str):  # some compatible servers send an object
        arguments = json.dumps(arguments)
    return ToolCallDelta(
        index=index, id=call.get("id"), name=function.get("name"), args_delta=arguments
    )
