"""The events of each SSE answer, as the OpenAPI document names them.

An SSE answer is a sequence of frames whose `data:` is JSON. OpenAPI 3.1 has no place for
"a stream of X", so the `text/event-stream` schema of a route describes one frame's data:
a union of the event models, discriminated on `type`, exported as a component so that
generated clients get a type per event. The unions are the very types the encoders
serialise (`RunEvent` is what the native encoder writes, byte for byte), so the document
cannot drift from the wire.

A route documents its stream with `event_stream(name)`; `app.api.openapi` adds the
component `name` and every model it references.
"""

from __future__ import annotations

from typing import Any

from pydantic import TypeAdapter

from app.api.schemas.openai_chunks import CHUNK_EVENTS_ADAPTER
from app.domain.events import RUN_EVENT_ADAPTER


class EventUnion:
    """A union of event models and what the OpenAPI component says about it."""

    def __init__(self, adapter: TypeAdapter[Any], description: str) -> None:
        self.adapter = adapter
        self.description = description


EVENT_STREAMS: dict[str, EventUnion] = {
    "RunEvent": EventUnion(
        RUN_EVENT_ADAPTER,
        "One event of the native SSE stream. On the wire each frame is `id:` (the event's "
        "sequence number in its run, from 1; send it back as Last-Event-ID), `event:` (the "
        "event's `type`) and `data:` (this object as JSON). Discriminated on `type`.",
    ),
    "ChatCompletionStreamEvent": EventUnion(
        CHUNK_EVENTS_ADAPTER,
        "One frame of a streamed Chat Completion (`data:` only, as OpenAI sends it): a "
        "`chat.completion.chunk`, or an `error` when the run fails. The stream ends with "
        "the literal `data: [DONE]`.",
    ),
}


def event_stream(name: str) -> dict[str, Any]:
    """A response's `content` for an SSE answer whose frames carry `name`'s events."""
    if name not in EVENT_STREAMS:
        raise KeyError(f"no event union named {name!r}")
    return {"text/event-stream": {"schema": {"$ref": f"#/components/schemas/{name}"}}}
