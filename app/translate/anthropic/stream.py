"""Read an Anthropic Messages stream: each streamed event -> provider events. Pure functions.

The provider parses each SSE event and hands it here; the events go on to the parts
builder, which keys tool-call pieces by the content block's index. Anything the vendor
sends that we do not understand is a clear `ProviderError`, never silently dropped; what
we deliberately skip says why in a comment.
"""

from __future__ import annotations

from typing import Any

from app.domain.errors import ProviderError, ProviderUnavailable
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

PROVIDER = "anthropic"

_FINISH: dict[str, FinishReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    # Only with server tools, which we never declare; the turn is over for us.
    "pause_turn": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "refusal": "refusal",
}


def protocol_error(what: str) -> ProviderError:
    """Anthropic sent something this translation does not know; say so, don't guess."""
    return ProviderError(
        f"Anthropic sent {what}, which this service does not understand.",
        provider=PROVIDER,
        code="provider_protocol_error",
    )


def _as_dict(event: Any) -> dict[str, Any]:
    if isinstance(event, dict):
        return event
    dump = getattr(event, "model_dump", None)
    if dump is None:
        raise TypeError(f"expected an Anthropic event object or dict, got {type(event).__name__}")
    value = dump()
    assert isinstance(value, dict)
    return value


def finish_reason(stop_reason: str) -> FinishReason:
    try:
        return _FINISH[stop_reason]
    except KeyError:
        raise protocol_error(f"the stop reason {stop_reason!r}") from None


def _usage(usage: dict[str, Any] | None) -> Usage:
    """Anthropic counts cache reads and writes apart from `input_tokens`; ours include
    them (as OpenAI's do), with the reads as `cached_tokens`."""
    usage = usage or {}
    cached = usage.get("cache_read_input_tokens") or 0
    fresh = usage.get("input_tokens") or 0
    written = usage.get("cache_creation_input_tokens") or 0
    return Usage(
        input_tokens=fresh + cached + written,
        output_tokens=usage.get("output_tokens") or 0,
        cached_tokens=cached,
    )


def stream_error(event: dict[str, Any]) -> ProviderUnavailable:
    """The `error` event: the upstream gave up mid-stream (overload, internal error)."""
    error = event.get("error") or {}
    kind = error.get("type") if isinstance(error, dict) else None
    return ProviderUnavailable(
        f"Anthropic stopped the response mid-stream ({kind or 'unknown error'}).",
        provider=PROVIDER,
    )


def stream_event_to_events(event: Any) -> list[ProviderEvent]:
    """One streamed Messages event (an SDK object or its dict) -> our events."""
    data = _as_dict(event)
    kind = data.get("type")
    if kind == "message_start":
        message = data.get("message") or {}
        return [
            ResponseMeta(response_id=message.get("id"), model=message.get("model")),
            _usage({**(message.get("usage") or {}), "output_tokens": 0}),
        ]
    if kind == "content_block_start":
        return _block_start(data["index"], data["content_block"])
    if kind == "content_block_delta":
        return _block_delta(data["index"], data["delta"])
    if kind == "message_delta":
        events: list[ProviderEvent] = [_usage(data.get("usage"))]
        delta = data.get("delta") or {}
        stop_reason = delta.get("stop_reason")
        if stop_reason is not None:
            details = delta.get("stop_details")
            explanation = details.get("explanation") if isinstance(details, dict) else None
            events.append(
                Finish(
                    reason=finish_reason(stop_reason),
                    detail=explanation if isinstance(explanation, str) else None,
                )
            )
        return events
    if kind in {"ping", "message_stop", "content_block_stop"}:
        # Keep-alives and end markers: the blocks and the message end when the
        # next start or the end of the stream says so, and the finish comes with
        # `message_delta`. The provider watches `message_stop` to spot a cut stream.
        return []
    if kind == "error":
        raise stream_error(data)
    raise protocol_error(f"a stream event of type {kind!r}")


def _block_start(index: int, block: dict[str, Any]) -> list[ProviderEvent]:
    kind = block.get("type")
    if kind == "text":
        text = block.get("text") or ""
        return [TextDelta(text=text)] if text else []
    if kind == "tool_use":
        # The start carries `input: {}` as a placeholder; the arguments arrive as
        # `input_json_delta` pieces, so the placeholder is not taken as arguments.
        return [ToolCallDelta(index=index, id=block["id"], name=block["name"])]
    if kind == "thinking":
        text = block.get("thinking") or ""
        signature = block.get("signature") or None
        return [ThinkingDelta(text=text, signature=signature)] if text or signature else []
    if kind == "redacted_thinking":
        # Encrypted reasoning: nothing a UI could show, and we never turn thinking on
        # ourselves, so there is no later turn it would have to travel back in.
        return []
    raise protocol_error(f"a content block of type {kind!r}")


def _block_delta(index: int, delta: dict[str, Any]) -> list[ProviderEvent]:
    kind = delta.get("type")
    if kind == "text_delta":
        return [TextDelta(text=delta["text"])]
    if kind == "input_json_delta":
        return [ToolCallDelta(index=index, args_delta=delta.get("partial_json") or "")]
    if kind == "thinking_delta":
        return [ThinkingDelta(text=delta["thinking"])]
    if kind == "signature_delta":
        return [ThinkingDelta(text="", signature=delta["signature"])]
    if kind == "citations_delta":
        # Source metadata for text that arrives as `text_delta`; parts have no place for
        # citations yet, and the words themselves are not lost.
        return []
    raise protocol_error(f"a content delta of type {kind!r}")
