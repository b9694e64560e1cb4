"""Parse native SSE bodies the way a browser's EventSource does (for tests)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Frame:
    id: int | None
    event: str
    data: dict[str, Any]


def parse(body: str) -> list[Frame]:
    """Every event frame in an SSE body; comment-only blocks (heartbeats) are skipped."""
    frames: list[Frame] = []
    for block in body.replace("\r\n", "\n").split("\n\n"):
        event_id: int | None = None
        event = "message"
        data: list[str] = []
        for line in block.split("\n"):
            if not line or line.startswith(":"):
                continue
            name, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if name == "id":
                event_id = int(value)
            elif name == "event":
                event = value
            elif name == "data":
                data.append(value)
        if data:
            frames.append(Frame(event_id, event, json.loads("\n".join(data))))
    return frames
