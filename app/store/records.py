"""What repositories return: plain frozen records, never ORM rows.

Routes and the run manager see these (and domain types such as `Message`); a row object
never leaves `app.store`, so no caller can lazy-load, mutate or leak a column by accident.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from app.domain.messages import Message
from app.domain.tooling import ConversationMode

ArchivedFilter = Literal["false", "true", "all"]
# `background_response`: made to hold a background response sent without a conversation.
ConversationKind = Literal["chat", "background_response"]


@dataclass(frozen=True, slots=True)
class ConversationRecord:
    id: str
    owner_id: str
    title: str | None
    title_set_by_user: bool
    model: str | None
    system_prompt: str | None
    mode: ConversationMode
    scope: dict[str, Any]
    metadata: dict[str, Any]
    archived_at: datetime | None
    created_at: datetime
    updated_at: datetime
    message_count: int
    last_message_preview: str | None
    active_run_id: str | None
    kind: ConversationKind = "chat"

    @property
    def archived(self) -> bool:
        return self.archived_at is not None


@dataclass(frozen=True, slots=True)
class MessageRecord:
    """A stored message version with its place in the conversation."""

    conversation_id: str
    position: int
    message: Message
    run_id: str | None
    created_at: datetime
    superseded_at: datetime | None
    superseded_by: str | None


@dataclass(frozen=True, slots=True)
class RunRecord:
    id: str
    conversation_id: str | None
    owner_id: str
    status: str
    model: str
    assistant_message_id: str | None
    created_at: datetime
    ended_at: datetime | None
    usage: dict[str, Any] | None
    error: dict[str, Any] | None
    last_seq: int
    options: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class ConversationPage:
    """One page of a conversation list; `next_cursor` is None on the last page."""

    items: list[ConversationRecord]
    next_cursor: str | None
