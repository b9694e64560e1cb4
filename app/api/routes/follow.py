"""`GET /api/conversations/{id}/events`: follow a conversation, not one run.

Every run of the conversation as it happens (a run another tab started included, after
`message_added`: the person's message that starts it), and `part_update` when a tool part
changes outside a run (an approval decided, a proposal batch applied or rejected), so every
open tab shows the same messages and cards. One EventSource per open conversation; it
resumes with Last-Event-ID (`<feed>.<seq>`, see `app.runs.following`) across runs,
instances and restarts. Comment heartbeats keep proxies from closing an idle stream; on
shutdown the stream ends and the browser reconnects, to whichever instance answers.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import Header, Query
from sse_starlette.event import ServerSentEvent
from sse_starlette.sse import EventSourceResponse

from app.api.deps import CallerDep, FollowDep, StreamDep, StreamSlot
from app.api.event_streams import event_stream
from app.api.routing import api_router
from app.api.schemas.follow import FollowOpened, MessageAdded
from app.api.sse_lean import LeanEventSourceResponse
from app.api.streaming import SSE_HEADERS
from app.domain.errors import InvalidRequest
from app.runs.following import CURSOR_PATTERN, Added, Cursor, Followed, Opened

router = api_router(prefix="/api/conversations", tags=["runs"])

RECONNECT_MS = 1000
_BLANK = b"\n\n"


def _cursor(after: str | None, last_event_id: str | None) -> Cursor | None:
    """Last-Event-ID wins over `after` (a reconnecting EventSource keeps its URL)."""
    for text, param in ((last_event_id, "Last-Event-ID"), (after, "after")):
        if text:
            cursor = Cursor.parse(text)
            if cursor is None:
                raise InvalidRequest(f"{param} must be a position `<feed>.<seq>`.", param=param)
            return cursor
    return None


def _frame(followed: Followed) -> bytes:
    item = followed.item
    if isinstance(item, Opened):
        head = b"retry: %d\nid: %s\nevent: follow\ndata: " % (
            RECONNECT_MS,
            str(followed.cursor).encode(),
        )
        opened = FollowOpened(
            conversation_id=item.conversation_id, active_run_id=item.active_run_id
        )
        body = opened.model_dump_json().encode()
        return head + body + _BLANK
    if isinstance(item, Added):
        added = MessageAdded(run_id=item.run_id, message=item.message)
        head = b"id: %s\nevent: message_added\ndata: " % str(followed.cursor).encode()
        return head + added.model_dump_json().encode() + _BLANK
    head = b"id: %s\nevent: %s\ndata: " % (str(followed.cursor).encode(), item.event.type.encode())
    return head + item.json() + _BLANK


@router.get(
    "/{conversation_id}/events",
    dependencies=[StreamSlot],
    responses={
        200: {
            "description": "SSE, never ending on its own: `follow` (the reader's position "
            "and the run in progress), then every run of the conversation as it happens "
            "(`message_added`: the message that starts it, then its native events, "
            "`run_start` to `run_end`) and `part_update` for tool parts "
            "changed outside a run. Resumes after `Last-Event-ID` (or `after`).",
            "content": event_stream("ConversationEvent"),
        },
        404: {"description": "Unknown conversation, or another user's."},
    },
    summary="Follow a conversation: every run and card change (EventSource).",
)
async def follow_conversation(
    conversation_id: str,
    follow: FollowDep,
    config: StreamDep,
    caller: CallerDep,
    after: Annotated[
        str | None,
        Query(
            max_length=40,
            description="Resume after this position (`<feed>.<seq>`, a frame's `id:`).",
            json_schema_extra={"pattern": CURSOR_PATTERN},
        ),
    ] = None,
    last_event_id: Annotated[
        str | None,
        Header(
            alias="Last-Event-ID",
            description="The last `id:` received (`<feed>.<seq>`); wins over `after`.",
            json_schema_extra={"pattern": CURSOR_PATTERN},
        ),
    ] = None,
) -> EventSourceResponse:
    cursor = _cursor(after, last_event_id)
    await follow.check(caller.user_id, conversation_id)  # a 404 before any 200 goes out

    async def body() -> AsyncIterator[bytes]:
        followed = follow.follow(
            caller.user_id, conversation_id, cursor, stop=lambda: config.drain.draining
        )
        async for batch in followed:
            yield b"".join(_frame(f) for f in batch)

    return LeanEventSourceResponse(
        body(),
        headers=SSE_HEADERS,
        ping=config.heartbeat_seconds,
        ping_message_factory=lambda: ServerSentEvent(comment="heartbeat"),
        send_timeout=config.send_timeout_seconds,
        sep="\n",
    )
