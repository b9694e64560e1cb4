"""The events of a conversation's follow stream: the native run events of every run of
the conversation, `message_added` for a person's message before the run it starts,
`part_update` for parts changed outside a run, and `follow` first."""

from __future__ import annotations

from typing import Annotated, Literal, Union, get_args

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from app.domain.events import RunEvent
from app.domain.messages import Message


class FollowOpened(BaseModel):
    """The first frame of every follow stream: where the reader stands (its `id:`) and the
    run in progress, if any (its events follow, from its start for a fresh reader)."""

    model_config = ConfigDict(extra="forbid", json_schema_serialization_defaults_required=True)

    type: Literal["follow"] = Field(default="follow", description="The event name.")
    conversation_id: str = Field(description="The conversation followed.")
    active_run_id: str | None = Field(description="The run in progress; null when none is.")


class MessageAdded(BaseModel):
    """A message a person added to the conversation (in this tab or another), as stored,
    before the run that answers it: every tab shows the question, not only the answer."""

    model_config = ConfigDict(extra="forbid", json_schema_serialization_defaults_required=True)

    type: Literal["message_added"] = Field(default="message_added", description="The event name.")
    run_id: str = Field(description="The run that answers this message.")
    message: Message = Field(description="The message, as the conversation stores it.")


_RUN_EVENTS = get_args(get_args(RunEvent)[0])
ConversationEvent = Annotated[
    Union[(FollowOpened, MessageAdded, *_RUN_EVENTS)],  # type: ignore[valid-type]
    Field(discriminator="type"),
]
CONVERSATION_EVENT_ADAPTER: TypeAdapter[ConversationEvent] = TypeAdapter(ConversationEvent)
