"""The non-streaming model call, which the service never makes: tests use it as a yardstick.

Providers only stream, and the agent loop folds each event as it arrives. Tests want the
whole answer at once (`fold`), and they check the stream translation against the vendors'
non-streamed answers: a whole `chat.completion` or Anthropic `Message` is replayed as the
stream that would have carried it, through the same stream translation, so "stream and
non-stream give identical parts" compares the vendor's two answers, not two translations.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterable
from typing import Any

from app.domain.stream import ProviderEvent
from app.translate.accumulator import ModelResponse, PartsBuilder
from app.translate.anthropic.stream import stream_event_to_events
from app.translate.openai_chat.stream import chunk_to_events


async def fold(events: AsyncIterable[ProviderEvent]) -> ModelResponse:
    """A whole stream of provider events folded into one model response."""
    builder = PartsBuilder()
    async for event in events:
        builder.feed(event)
    return builder.build()


def _as_dict(value: Any) -> dict[str, Any]:
    data = value if isinstance(value, dict) else value.model_dump()
    assert isinstance(data, dict)
    return data


def completion_to_events(completion: Any) -> list[ProviderEvent]:
    """A `chat.completion` (SDK object or dict) as the events of the stream that carries it.

    That stream is one chunk with the whole message, one with the usage, one with the
    finish reason: exactly what a server streaming the same answer in one piece sends.
    """
    data = _as_dict(completion)
    head = {"id": data.get("id"), "model": data.get("model")}
    choice = next((c for c in data.get("choices") or [] if c.get("index", 0) == 0), None)
    message = [] if choice is None else [{"delta": choice.get("message") or {}}]
    finish = [] if choice is None else [{"delta": {}, "finish_reason": choice.get("finish_reason")}]
    chunks = [
        {**head, "choices": message},
        {**head, "choices": [], "usage": data.get("usage")},
        {**head, "choices": finish},
    ]
    return [event for n, c in enumerate(chunks) for event in chunk_to_events(c, first=n == 0)]


def message_to_events(message: Any) -> list[ProviderEvent]:
    """An Anthropic `Message` (SDK object or dict) as the events of the stream that carries it.

    That stream opens the message, starts each content block whole (a `tool_use` block's
    input as one `input_json_delta`), then ends with the usage and the stop reason.
    """
    data = _as_dict(message)
    if data.get("type") == "error":
        return stream_event_to_events(data)  # raises, as the stream's error event does
    usage = data.get("usage") or {}
    stream: list[dict[str, Any]] = [
        {
            "type": "message_start",
            "message": {
                "id": data.get("id"),
                "model": data.get("model"),
                "usage": {"input_tokens": usage.get("input_tokens")},
            },
        }
    ]
    for index, block in enumerate(data.get("content") or []):
        stream.append({"type": "content_block_start", "index": index, "content_block": block})
        if block.get("type") == "tool_use" and block.get("input"):
            arguments = json.dumps(block["input"])
            delta = {"type": "input_json_delta", "partial_json": arguments}
            stream.append({"type": "content_block_delta", "index": index, "delta": delta})
    stream.append(
        {"type": "message_delta", "delta": {"stop_reason": data.get("stop_reason")}, "usage": usage}
    )
    return [event for item in stream for event in stream_event_to_events(item)]
