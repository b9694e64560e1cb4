"""The native SSE protocol: `id:` is the run's sequence number, `event:` the event type,
`data:` the event as JSON.

JSON escapes every newline inside strings, so model text containing `\\n\\nevent: x` or
`data:` can never break out of its frame. The JSON is the event's own cached encoding
(`SequencedEvent.json`), handed out as a piece of its own so that every reader of a long
answer sends the same buffer.
"""

from __future__ import annotations

from app.domain.events import ErrorEvent, SequencedEvent

_END = b"\n\n"


def frame_pieces(item: SequencedEvent) -> list[bytes]:
    head = b"id: %d\nevent: %s\ndata: " % (item.seq, item.type.encode())
    return [head, item.json(), _END]


def frames(batch: list[SequencedEvent]) -> list[bytes]:
    """The frames of a batch, as pieces (see `app.api.streaming`)."""
    out: list[bytes] = []
    for item in batch:
        out.extend(frame_pieces(item))
    return out


def frame(item: SequencedEvent) -> bytes:
    return b"".join(frame_pieces(item))


def error_frame(event: ErrorEvent) -> bytes:
    """An `error` event outside the run's sequence (no `id:`, so Last-Event-ID keeps
    pointing at the last event of the run the reader has)."""
    return b"event: error\ndata: " + event.__pydantic_serializer__.to_json(event) + _END
