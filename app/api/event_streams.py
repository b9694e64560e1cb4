"""The events of each SSE answer, as the OpenAPI document names them.

An SSE answer is a sequence of frames (`event:`, `id:`, `data:`). As OpenAPI reads an event
stream's schema (3.2 spells it out; FastAPI and Schemathesis read 3.1 the same way), the
`text/event-stream` schema of a route describes one frame: the component `<name>Frame`,
whose `data` is a JSON string (`contentMediaType`) holding one event of the union `<name>`
(`contentSchema`). The union is a component of its own, so that generated clients get a
type per event; the native one is discriminated on `type`, which is also the frame's
`event:` name. The unions are the very types the encoders serialise (`RunEvent` is what
the native encoder writes, byte for byte), so the document cannot drift from the wire, and
Schemathesis checks every frame it receives against it.

A route documents its stream with `event_stream(name)`; `app.api.openapi` adds both
components and every model they reference.
"""

from __future__ import annotations

from typing import Any

from pydantic import TypeAdapter

from app.api.schemas.follow import CONVERSATION_EVENT_ADAPTER
from app.api.schemas.openai_chunks import CHUNK_EVENTS_ADAPTER
from app.api.schemas.queue import QUEUE_EVENT_ADAPTER
from app.api.schemas.responses_events import RESPONSE_EVENTS_ADAPTER
from app.api.schemas.ui_chunks import UI_CHUNKS_ADAPTER
from app.domain.events import RUN_EVENT_ADAPTER


class EventUnion:
    """A union of event models and what the OpenAPI component says about it.

    `end_marker`: a `data:` that is not JSON and ends the stream (OpenAI's `[DONE]`).
    `named`: frames carry `event:` (the event's `type`); otherwise they are `data:` only,
    which an EventSource reads as `message` events.
    """

    def __init__(
        self,
        adapter: TypeAdapter[Any],
        description: str,
        *,
        end_marker: str | None = None,
        named: bool = True,
    ) -> None:
        self.adapter = adapter
        self.description = description
        self.end_marker = end_marker
        self.named = named


EVENT_STREAMS: dict[str, EventUnion] = {
    "RunEvent": EventUnion(
        RUN_EVENT_ADAPTER,
        "One event of the native SSE stream. On the wire each frame is `id:` (the event's "
        "sequence number in its run, from 1; send it back as Last-Event-ID), `event:` (the "
        "event's `type`) and `data:` (this object as JSON). Discriminated on `type`.",
    ),
    "ConversationEvent": EventUnion(
        CONVERSATION_EVENT_ADAPTER,
        "One event of a conversation's follow stream: `follow` first, then the native "
        "events of every run of the conversation as it happens (after `message_added`, the "
        "person's message that starts it) and `part_update` for tool parts changed "
        "outside a run. `id:` is the reader's position `<feed>.<seq>`; send "
        "it back as Last-Event-ID. Discriminated on `type`.",
    ),
    "ChatCompletionStreamEvent": EventUnion(
        CHUNK_EVENTS_ADAPTER,
        "One frame of a streamed Chat Completion (`data:` only, as OpenAI sends it): a "
        "`chat.completion.chunk`, or an `error` when the run fails. The stream ends with "
        "the literal `data: [DONE]`.",
        end_marker="[DONE]",
        named=False,
    ),
    "ResponseStreamEvent": EventUnion(
        RESPONSE_EVENTS_ADAPTER,
        "One event of an OpenAI Responses stream: `event:` is its `type`, `data:` this "
        "object as JSON, `sequence_number` its place in the stream from 0. Discriminated "
        "on `type`.",
    ),
    "QueueEvent": EventUnion(
        QUEUE_EVENT_ADAPTER,
        "One event of the review queue feed: `id:` (the caller's feed sequence number; "
        "send it back as Last-Event-ID), `event:` (the `type`), `data:` (this object).",
    ),
    "UIMessageChunk": EventUnion(
        UI_CHUNKS_ADAPTER,
        "One chunk of a Vercel AI SDK UI message stream (`data:` only; header "
        "`x-vercel-ai-ui-message-stream: v1`), discriminated on `type`. The chunks a "
        "client's major version does not know are never sent to it. The stream ends with "
        "the literal `data: [DONE]`.",
        end_marker="[DONE]",
        named=False,
    ),
}


def event_stream(name: str) -> dict[str, Any]:
    """A response's `content` for an SSE answer whose frames carry `name`'s events."""
    if name not in EVENT_STREAMS:
        raise KeyError(f"no event union named {name!r}")
    return {"text/event-stream": {"schema": {"$ref": f"#/components/schemas/{name}Frame"}}}
