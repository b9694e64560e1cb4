"""`/api/conversations`: durable conversations (create, list, read, rename, archive, purge).

Thin: each route opens one short transaction, calls the repositories (which own the
queries and the ownership filter) and shapes the answer. A missing or foreign id is 404
`not_found` from the repository, the same on every route.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import Path, Query, Response, status
from fastapi.responses import JSONResponse

from app.api import idempotency
from app.api.conversation_removal import remove_conversation
from app.api.deps import (
    ApprovalsDep,
    CallerDep,
    CatalogDep,
    DbDep,
    FilesDep,
    IdempotencyDep,
    RunsDep,
    SubmissionsDep,
)
from app.api.routing import api_router
from app.api.schemas.conversations import (
    ConversationCreate,
    ConversationDetail,
    ConversationList,
    ConversationOut,
    ConversationPatch,
)
from app.store.database import Tx
from app.store.idempotency import Outcome, once

router = api_router(prefix="/api/conversations", tags=["conversations"])

ConversationId = Annotated[str, Path(description="Conversation id (`conv_...`).")]
NOT_FOUND: dict[int | str, dict[str, Any]] = {
    404: {"description": "No such conversation (or not yours)."}
}


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    response_model=ConversationOut,
    summary="Create a conversation.",
    openapi_extra=idempotency.OPENAPI,
    responses={404: {"description": "`model_not_found`: the model is not available."}},
)
async def create_conversation(
    body: ConversationCreate,
    catalog: CatalogDep,
    db: DbDep,
    caller: CallerDep,
    idempotency_key: IdempotencyDep,
) -> ConversationOut | JSONResponse:
    model = None
    if body.model is not None:
        model = catalog.resolve(body.model, caller.roles).id

    async def create(tx: Tx) -> ConversationOut:
        record = await tx.conversations.create(
            caller.user_id,
            title=body.title,
            model=model,
            system_prompt=body.system_prompt,
            mode=body.mode,
            scope=body.scope.model_dump(exclude_none=True) if body.scope else None,
            metadata=body.metadata,
        )
        return ConversationOut.from_record(record)

    if idempotency_key is None:
        async with db.write() as tx:
            return await create(tx)

    async def kept(tx: Tx) -> Outcome:
        out = await create(tx)
        return Outcome(status.HTTP_201_CREATED, out.model_dump(mode="json"), out.id)

    outcome = await once(db, idempotency_key.of(caller.user_id), kept)
    return JSONResponse(outcome.body, status_code=outcome.status)


@router.get("", response_model=ConversationList, summary="List your conversations.")
async def list_conversations(
    db: DbDep,
    caller: CallerDep,
    limit: Annotated[int, Query(ge=1, le=100, description="Page size.")] = 20,
    cursor: Annotated[
        str | None, Query(max_length=512, description="`next_cursor` of the previous page.")
    ] = None,
    archived: Annotated[
        Literal["false", "true", "all"],
        Query(description="`false`: live only (default); `true`: archived only; `all`."),
    ] = "false",
    q: Annotated[
        str | None, Query(max_length=200, description="Case-insensitive title search.")
    ] = None,
) -> ConversationList:
    """Your conversations, newest first. One made to hold a background response sent
    without a conversation (`POST /v1/responses`, `background: true`) is not listed, until
    you send it a message of your own."""
    async with db.read() as tx:
        page = await tx.conversations.list(
            caller.user_id, limit=limit, cursor=cursor, archived=archived, q=q
        )
    return ConversationList(
        data=[ConversationOut.from_record(r) for r in page.items],
        next_cursor=page.next_cursor,
        has_more=page.next_cursor is not None,
    )


@router.get(
    "/{conversation_id}",
    response_model=ConversationDetail,
    summary="A conversation with its messages and active run.",
    responses=NOT_FOUND,
)
async def get_conversation(
    conversation_id: ConversationId,
    db: DbDep,
    approvals: ApprovalsDep,
    submissions: SubmissionsDep,
    caller: CallerDep,
) -> ConversationDetail:
    # A call whose outcome an outage lost is closed first: it would show waiting for a
    # decision or an answer that can no longer be given.
    await approvals.settle_lost_in(caller, conversation_id)
    await submissions.settle_lost_in(caller.user_id, conversation_id)
    async with db.read() as tx:
        record = await tx.conversations.get(caller.user_id, conversation_id)
        messages = await tx.messages.history(caller.user_id, conversation_id)
    return ConversationDetail.from_parts(record, messages)


@router.patch(
    "/{conversation_id}",
    response_model=ConversationOut,
    summary="Rename, change metadata or mode, archive or restore.",
    responses=NOT_FOUND,
)
async def update_conversation(
    conversation_id: ConversationId, body: ConversationPatch, db: DbDep, caller: CallerDep
) -> ConversationOut:
    async with db.write() as tx:
        repo = tx.conversations
        before = await repo.get(caller.user_id, conversation_id)
        record = await repo.update(
            caller.user_id,
            conversation_id,
            title=body.title,
            metadata=body.metadata,
            archived=body.archived,
            mode=body.mode,
        )
        if record.archived != before.archived:
            await tx.audit(
                actor_id=caller.user_id,
                action="conversation.archive" if record.archived else "conversation.restore",
                target_type="conversation",
                target_id=conversation_id,
            )
    return ConversationOut.from_record(record)


@router.delete(
    "/{conversation_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    response_class=Response,
    summary="Archive a conversation, or delete it for good with `purge=true`.",
    responses=NOT_FOUND,
)
async def delete_conversation(
    conversation_id: ConversationId,
    runs: RunsDep,
    db: DbDep,
    files: FilesDep,
    caller: CallerDep,
    purge: Annotated[
        bool,
        Query(
            description="Delete messages, runs, events and attached files for good instead "
            "of archiving."
        ),
    ] = False,
) -> Response:
    await remove_conversation(conversation_id, runs, db, files, caller, purge=purge)
    return Response(status_code=status.HTTP_204_NO_CONTENT)
