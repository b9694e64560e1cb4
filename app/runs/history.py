"""Where a conversation's history stands: its last message of a role."""

from __future__ import annotations

from app.domain.messages import Message


def last_index(history: list[Message], role: str) -> int | None:
    for index in range(len(history) - 1, -1, -1):
        if history[index].role == role:
            return index
    return None


def last_assistant(history: list[Message]) -> Message | None:
    index = last_index(history, "assistant")
    return history[index] if index is not None else None
