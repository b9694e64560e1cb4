"""What appending a message writes: the conversation's UPDATE parameters and the message's
row, from the message alone (pure). `MessageRepo.append` and the one-trip turn on SQLite
(`app.store.sqlite_turns`) send the same values."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from app.domain.errors import InvalidRequest
from app.domain.messages import MESSAGE_SCHEMA_VERSION, Message
from app.store.message_codec import encode_content
from app.store.tables.types import utcnow

TITLE_MAX_CHARS = 60
MESSAGE_ID_MAX_CHARS = 128  # the column's width
PREVIEW_MAX_CHARS = 200
_SPACES = re.compile(r"\s+")


def auto_title(text: str) -> str | None:
    """The first words of `text`, at most 60 characters, never cutting a word in half
    (a single word longer than that is cut hard)."""
    flat = _SPACES.sub(" ", text.replace("\x00", "")).strip()
    if len(flat) <= TITLE_MAX_CHARS:
        return flat or None
    head = flat[: TITLE_MAX_CHARS + 1]
    cut = head.rfind(" ")
    title = head[:cut] if cut > 0 else flat[:TITLE_MAX_CHARS]
    return title.rstrip(" ,;:-") or None


def preview(message: Message) -> str | None:
    """The message's text with its spaces flattened, cut to 200 characters.

    Only as much of the text is flattened as the preview can show: a long answer's whole
    text was flattened (a substitution per word) to keep its first 200 characters. A
    prefix flattens to a prefix of the whole text's flattening, but for its very end (a
    run of spaces cut short, stripped), so a prefix that flattens to more than 201
    characters gives the same preview; a shorter one is tried again twice as long."""
    text = message.text()
    size = 2 * PREVIEW_MAX_CHARS
    while True:
        flat = _SPACES.sub(" ", text[:size].replace("\x00", "")).strip()
        if size >= len(text) or len(flat) > PREVIEW_MAX_CHARS + 1:
            break
        size *= 2
    if not flat:
        return None
    if len(flat) <= PREVIEW_MAX_CHARS:
        return flat
    return flat[: PREVIEW_MAX_CHARS - 1].rstrip() + "…"


@dataclass(frozen=True, slots=True)
class AppendValues:
    """`bump_conversation`'s options and parameters, and the message's row (by column,
    without its position, which the UPDATE hands out)."""

    options: dict[str, bool]
    params: dict[str, Any]
    row: dict[str, Any]


def append_values(
    owner_id: str,
    conversation_id: str,
    message: Message,
    *,
    run_id: str | None,
    release_run_id: str | None = None,
    claim_run_id: str | None = None,
) -> AppendValues:
    if len(message.id) > MESSAGE_ID_MAX_CHARS:
        raise InvalidRequest(
            f"A message id is at most {MESSAGE_ID_MAX_CHARS} characters.", param="id"
        )
    text_preview = preview(message)
    title = auto_title(message.text()) if message.role == "user" else None
    now = utcnow()
    options = {
        "preview": text_preview is not None,
        "title": title is not None,
        "release": release_run_id is not None,
        "claim": claim_run_id is not None,
    }
    params: dict[str, Any] = {
        "p_cid": conversation_id,
        "p_owner": owner_id,
        "p_now": now,
        "p_mid": message.id,
    }
    for name, value in (
        ("p_preview", text_preview),
        ("p_title", title),
        ("p_release", release_run_id),
        ("p_claim", claim_run_id),
    ):
        if value is not None:
            params[name] = value
    row = {
        "conversation_id": conversation_id,
        "id": message.id,
        "owner_id": owner_id,
        "role": message.role,
        "content": encode_content(message),
        "schema_version": MESSAGE_SCHEMA_VERSION,
        "metadata": message.metadata,
        "run_id": run_id,
        "created_at": now,
    }
    return AppendValues(options, params, row)
