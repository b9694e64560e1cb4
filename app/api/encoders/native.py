"""The native SSE protocol: `id:` is the run's sequence number, `event:` the event type,
`data:` the event as JSON.

JSON escapes every newline inside strings, so model text containing `\\n\\nevent: x` or
`data:` can never break out of its frame.
"""

from __future__ import annotations

from app.domain.events import SequencedEvent


def frame(item: SequencedEvent) -> bytes:
    event = item.event
    return b"id: %d\nevent: %s\ndata: %s\n\n" % (
        item.seq,
        event.type.encode(),
        event.__pydantic_serializer__.to_json(event),
    )


def frames(batch: list[SequencedEvent]) -> bytes:
    return b"".join(frame(item) for item in batch)
