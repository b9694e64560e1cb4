"""The caller's review queue across conversations: `GET /api/queue` (the state on load,
with the feed `cursor`) and `GET /api/queue/events` (an EventSource feed of changes:
`added`, `decided`, `expired`, `applied`, `undone`, each with the counts after it).

The feed resumes from `Last-Event-ID` (or `?after=`); a fresh stream starts with a
`count` frame whose `id:` is the cursor it follows from. Comment heartbeats keep proxies
from closing an idle stream; on shutdown the stream ends and the browser reconnects.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import Query
from sse_starlette.event import ServerSentEvent
from sse_starlette.sse import EventSourceResponse

from app.api.deps import CallerDep, QueueDep, StreamDep, StreamSlot
from app.api.event_streams import event_stream
from app.api.exact_params import last_event_id_header, resume_position
from app.api.routing import api_router
from app.api.schemas.queue import PendingOut, QueueEventOut, QueueItemOut, QueueOut
from app.api.sse_lean import LeanEventSourceResponse
from app.api.streaming import SSE_HEADERS
from app.store.repos.queue import Pending, QueueItem

router = api_router(prefix="/api/queue", tags=["queue"])

RECONNECT_MS = 2000
MAX_SEQ = 2**62


def _pending(p: Pending) -> PendingOut:
    return PendingOut(approvals=p.approvals, proposals=p.proposals, total=p.total)


def _item(i: QueueItem) -> QueueItemOut:
    return QueueItemOut(
        type=i.item_type,
        id=i.id,
        conversation_id=i.conversation_id,
        tool_name=i.tool_name,
        summary=i.summary,
        status=i.status,
        created_at=i.created_at,
        expires_at=i.expires_at,
    )


@router.get("", response_model=QueueOut, summary="What waits for you, across conversations.")
async def get_queue(queue: QueueDep, caller: CallerDep) -> QueueOut:
    state = await queue.state(caller)
    return QueueOut(
        cursor=state.cursor,
        pending=_pending(state.pending),
        items=[_item(i) for i in state.items],
    )


def _frame(event: QueueEventOut, *, retry: int | None = None) -> ServerSentEvent:
    return ServerSentEvent(
        data=event.model_dump_json(), event=event.type, id=str(event.seq), retry=retry
    )


def _resume_point(after: int | None, last_event_id: str | None) -> int | None:
    if not last_event_id:
        return after
    return max(after or 0, resume_position(last_event_id, MAX_SEQ))


@router.get(
    "/events",
    dependencies=[StreamSlot],
    responses={
        200: {
            "description": "The queue feed (EventSource): replays the events after "
            "`Last-Event-ID` (or `after`), then follows live; a fresh stream starts with "
            "a `count` frame.",
            "content": event_stream("QueueEvent"),
        }
    },
    summary="Follow changes to your review queue (EventSource); resume with Last-Event-ID.",
)
async def queue_events(
    queue: QueueDep,
    config: StreamDep,
    caller: CallerDep,
    after: Annotated[
        int | None, Query(ge=0, le=MAX_SEQ, description="Replay events after this number.")
    ] = None,
    last_event_id: Annotated[str | None, last_event_id_header(MAX_SEQ)] = None,
) -> EventSourceResponse:
    start = _resume_point(after, last_event_id)

    async def frames() -> AsyncIterator[Any]:
        retry: int | None = RECONNECT_MS
        cursor = start
        if cursor is None:
            state = await queue.state(caller)
            cursor = state.cursor
            count = QueueEventOut(type="count", seq=cursor, pending=_pending(state.pending))
            yield _frame(count, retry=retry)
            retry = None
        async for batch in queue.follow(caller, cursor, stop=lambda: config.drain.draining):
            for event in batch:
                out = QueueEventOut.model_validate(
                    {
                        "type": event.kind,
                        "seq": event.seq,
                        "item": event.item,
                        "pending": event.pending,
                    }
                )
                yield _frame(out, retry=retry)
                retry = None

    return LeanEventSourceResponse(
        frames(),
        headers=SSE_HEADERS,
        ping=config.heartbeat_seconds,
        ping_message_factory=lambda: ServerSentEvent(comment="heartbeat"),
        send_timeout=config.send_timeout_seconds,
        sep="\n",
    )
