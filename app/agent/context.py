"""Fit a conversation into a model's context window before each model call.

A rough token estimate (4 characters a token, over the JSON of each message) is enough
to stay clear of the limit: it errs on the high side for English and code, and the
reserve for the answer absorbs the rest. Oldest turns go first; the system prompt and the
newest user turn always stay. A tool call and its result live in the same assistant
message here, so trimming whole messages can never separate them.
"""

from __future__ import annotations

import re

from app.domain.events import ContextInfo
from app.domain.messages import Message

CHARS_PER_TOKEN = 4
MAX_USER_MESSAGE_CHARS = 100_000
TRUNCATION_MARKER = "[...truncated]"


def estimate_tokens(message: Message) -> int:
    return len(message.model_dump_json()) // CHARS_PER_TOKEN + 4


def fit_history(
    messages: list[Message], *, context_window: int, reserve_tokens: int
) -> tuple[list[Message], ContextInfo]:
    """The newest messages that fit in `context_window - reserve_tokens`."""
    limit = max(context_window - reserve_tokens, context_window // 4)
    system = [m for m in messages if m.role == "system"]
    rest = [m for m in messages if m.role != "system"]
    used = sum(estimate_tokens(m) for m in system)
    kept: list[Message] = []
    for message in reversed(rest):
        cost = estimate_tokens(message)
        if kept and used + cost > limit:
            break
        kept.append(message)
        used += cost
    kept.reverse()
    # A history must not open with an assistant turn whose user turn was trimmed away.
    while len(kept) > 1 and kept[0].role != "user":
        used -= estimate_tokens(kept.pop(0))
    trimmed = len(rest) - len(kept)
    return system + kept, ContextInfo(tokens=used, limit=context_window, trimmed_messages=trimmed)


_SENTENCE_END = re.compile(r"[.!?\u3002](?=\s)|\n")


def truncate_user_text(text: str, limit: int = MAX_USER_MESSAGE_CHARS) -> tuple[str, bool]:
    """Cut an over-long message at the last sentence boundary before `limit`."""
    if len(text) <= limit:
        return text, False
    head = text[:limit]
    cut = limit
    for match in _SENTENCE_END.finditer(head):
        cut = match.end()
    if cut < limit // 2:  # no sentence boundary in sight: cut at a word
        space = head.rfind(" ")
        cut = space if space > limit // 2 else limit
    return head[:cut].rstrip() + "\n\n" + TRUNCATION_MARKER, True


# The tool router's view of a conversation: a user message this short is a follow-up
# routed with the one before it; tools used in this many latest messages stay offered.
FOLLOW_UP_WORDS = 4
RECENT_MESSAGES = 6


def routing_request(history: list[Message]) -> tuple[str, list[str]]:
    """What the tool router routes: the latest user message (with the one before when it
    is a short follow-up such as "yes, the second one"), and the tools the latest
    assistant messages used."""
    said = [m.text() for m in history if m.role == "user"]
    text = said[-1] if said else ""
    if len(said) > 1 and len(text.split()) <= FOLLOW_UP_WORDS:
        text = f"{said[-2]}\n{text}"
    used = [
        p.data.toolName
        for m in history[-RECENT_MESSAGES:]
        if m.role == "assistant"
        for p in m.tool_parts()
    ]
    return text, list(dict.fromkeys(used))
