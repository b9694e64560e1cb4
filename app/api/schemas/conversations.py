"""DTOs of `/api/conversations`: what a client sends and gets, separate from the tables.

One conversation object serves two kinds of client at once:
- ours (typed): `title`, `message_count`, `archived`, ISO timestamps in `*_iso`;
- Gravity UI AIKit's `useOpenAIConversationsAdapter` (and anything reading OpenAI's
  Conversations API shape): `object: "conversation"`, `created_at` as Unix seconds, and
  `metadata.title` / `metadata.last_message` strings, which AIKit shows as the chat's name
  and last message.

So `created_at` / `updated_at` are Unix seconds (integers, as in OpenAI's API and our
`/v1` surface), `created_at_iso` / `updated_at_iso` carry the same instants as ISO 8601,
and `metadata` is the caller's own metadata with `title` and `last_message` mirrored in by
the server. Those two keys are reserved: a request that sets them is refused (422), use
`title` instead.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, field_validator

from app.domain.messages import Message
from app.store.records import ConversationRecord

Mode = Literal["auto", "propose"]
RESERVED_METADATA_KEYS = frozenset({"title", "last_message"})
TITLE_FIELD = Field(
    default=None,
    min_length=1,
    max_length=255,
    description="Title shown in the chat list; the first user message sets one when absent.",
)
METADATA_FIELD = Field(
    default=None,
    description="Free-form JSON object stored with the conversation (replaced as a whole "
    "on PATCH). The keys `title` and `last_message` are reserved.",
)


def _no_reserved_keys(metadata: dict[str, Any] | None) -> dict[str, Any] | None:
    if metadata is not None and (taken := RESERVED_METADATA_KEYS.intersection(metadata)):
        raise ValueError(
            f"metadata keys {sorted(taken)} are reserved (mirrored by the server); "
            "set `title` instead"
        )
    return metadata


class _Request(BaseModel):
    # An unknown field (say `owner_id`) is a 422, never a silent write.
    model_config = ConfigDict(extra="forbid")


class ScopeIn(_Request):
    """The scope a conversation is bound to; tools get these ids pinned."""

    workspace_id: str | None = Field(
        default=None, max_length=255, description="Workspace the conversation is bound to."
    )
    session_id: str | None = Field(
        default=None, max_length=255, description="Session the conversation is bound to."
    )


class ConversationCreate(_Request):
    """A new conversation; unknown fields are refused."""

    title: str | None = TITLE_FIELD
    model: str | None = Field(
        default=None, description="Catalogue model id for this conversation; default if absent."
    )
    system_prompt: str | None = Field(
        default=None, max_length=100_000, description="System prompt for every run."
    )
    mode: Mode = Field(
        default="auto",
        description="`auto`: tools run per their policy; `propose`: changes are queued "
        "for a human to approve.",
    )
    metadata: dict[str, Any] | None = METADATA_FIELD
    scope: ScopeIn | None = Field(
        default=None, description="Scope bound at creation; tools are pinned to it."
    )

    _check_metadata = field_validator("metadata")(_no_reserved_keys)


class ConversationPatch(_Request):
    """A partial update: only the fields present change."""

    title: str | None = TITLE_FIELD
    metadata: dict[str, Any] | None = METADATA_FIELD
    archived: StrictBool | None = Field(
        default=None, description="`true` archives (soft delete), `false` restores."
    )
    mode: Mode | None = Field(default=None, description="Switch between `auto` and `propose`.")

    _check_metadata = field_validator("metadata")(_no_reserved_keys)


class ConversationOut(BaseModel):
    """A conversation as both our UI and AIKit's history adapter read it."""

    id: str = Field(description="Conversation id (`conv_...`).")
    object: Literal["conversation"] = Field(
        default="conversation", description="Always `conversation` (OpenAI-style type tag)."
    )
    title: str | None = Field(description="Title, or null until the first user message.")
    created_at: int = Field(description="Creation time, Unix seconds (what AIKit reads).")
    updated_at: int = Field(description="Last change (new message, rename...), Unix seconds.")
    created_at_iso: datetime = Field(description="Creation time, ISO 8601 UTC.")
    updated_at_iso: datetime = Field(description="Last change, ISO 8601 UTC.")
    archived: bool = Field(description="True when archived (soft-deleted).")
    archived_at: datetime | None = Field(description="When it was archived, ISO 8601 UTC.")
    mode: Mode = Field(description="`auto` or `propose`.")
    model: str | None = Field(description="Model id chosen at creation, null for the default.")
    system_prompt: str | None = Field(description="System prompt, if any.")
    scope: dict[str, Any] = Field(description="Scope bound at creation.")
    message_count: int = Field(description="Number of current (not superseded) messages.")
    last_message_preview: str | None = Field(description="Text of the latest message, cut.")
    active_run_id: str | None = Field(
        description="The run in progress, if any: follow it at `.../runs/{id}/events`."
    )
    metadata: dict[str, Any] = Field(
        description="The caller's metadata plus `title` and `last_message` mirrored by the "
        "server (AIKit's history list reads these)."
    )

    @classmethod
    def from_record(cls, record: ConversationRecord) -> ConversationOut:
        return cls(**_fields(record))


class ConversationDetail(ConversationOut):
    """A conversation with its current messages, for opening a chat."""

    messages: list[Message] = Field(
        description="Current messages in order, content as typed parts or plain text."
    )

    @classmethod
    def from_parts(cls, record: ConversationRecord, messages: list[Message]) -> ConversationDetail:
        return cls(**_fields(record), messages=messages)


class ConversationList(BaseModel):
    """A page of the caller's conversations, for a chat history sidebar."""

    object: Literal["list"] = Field(default="list", description="Always `list`.")
    data: list[ConversationOut] = Field(description="Conversations, most recently updated first.")
    next_cursor: str | None = Field(
        description="Pass as `cursor` for the next page; null on the last page."
    )
    has_more: bool = Field(description="True when another page exists.")


def _fields(record: ConversationRecord) -> dict[str, Any]:
    mirrored: dict[str, Any] = {}
    if record.title is not None:
        mirrored["title"] = record.title
    if record.last_message_preview is not None:
        mirrored["last_message"] = record.last_message_preview
    return {
        "id": record.id,
        "title": record.title,
        "created_at": int(record.created_at.timestamp()),
        "updated_at": int(record.updated_at.timestamp()),
        "created_at_iso": record.created_at,
        "updated_at_iso": record.updated_at,
        "archived": record.archived,
        "archived_at": record.archived_at,
        "mode": record.mode,
        "model": record.model,
        "system_prompt": record.system_prompt,
        "scope": record.scope,
        "message_count": record.message_count,
        "last_message_preview": record.last_message_preview,
        "active_run_id": record.active_run_id,
        "metadata": {**record.metadata, **mirrored},
    }
