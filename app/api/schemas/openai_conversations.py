"""Bodies of the OpenAI Conversations surface (`/v1/conversations`)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from app.api.schemas.openai_metadata import OpenAIMetadata
from app.store.records import ConversationRecord

MAX_ITEMS = 20  # OpenAI's own cap on items added in one request


class ConversationCreateV1(BaseModel):
    """`client.conversations.create(...)`'s body."""

    model_config = ConfigDict(extra="forbid")
    items: list[dict[str, Any]] | None = Field(
        default=None, max_length=MAX_ITEMS, description="Messages to start the conversation with."
    )
    metadata: OpenAIMetadata | None = Field(
        default=None, description="Up to 16 string key-value pairs."
    )


class ConversationUpdateV1(BaseModel):
    """`client.conversations.update(...)`'s body."""

    model_config = ConfigDict(extra="forbid")
    metadata: OpenAIMetadata = Field(description="Replaces the metadata.")


class ItemsCreateV1(BaseModel):
    """`client.conversations.items.create(...)`'s body."""

    model_config = ConfigDict(extra="forbid")
    items: list[dict[str, Any]] = Field(
        min_length=1, max_length=MAX_ITEMS, description="Messages to add, in order."
    )


class ConversationV1(BaseModel):
    """OpenAI's Conversation object over one of our durable conversations."""

    id: str = Field(description="The conversation id (the same as on /api/conversations).")
    object: Literal["conversation"] = Field(default="conversation", description="Always this.")
    created_at: int = Field(description="Unix seconds.")
    metadata: dict[str, Any] = Field(description="The conversation's metadata.")

    @classmethod
    def of(cls, record: ConversationRecord) -> ConversationV1:
        return cls(
            id=record.id,
            created_at=int(record.created_at.timestamp()),
            metadata=record.metadata,
        )


class ConversationDeletedV1(BaseModel):
    """What a delete answers: the conversation is gone for good."""

    id: str = Field(description="The deleted conversation's id.")
    object: Literal["conversation.deleted"] = Field(
        default="conversation.deleted", description="Always this."
    )
    deleted: bool = Field(default=True, description="Always true.")


class ItemListV1(BaseModel):
    """A page of items, OpenAI's list shape."""

    object: Literal["list"] = Field(default="list", description="Always `list`.")
    data: list[dict[str, Any]] = Field(description="Items: message, mcp_call, function_call...")
    first_id: str | None = Field(description="Id of the first item of the page.")
    last_id: str | None = Field(description="Id of the last item; pass as `after`.")
    has_more: bool = Field(description="More items follow in this order.")

    @classmethod
    def of(cls, items: list[dict[str, Any]], has_more: bool) -> ItemListV1:
        return cls(
            data=items,
            first_id=items[0]["id"] if items else None,
            last_id=items[-1]["id"] if items else None,
            has_more=has_more,
        )
