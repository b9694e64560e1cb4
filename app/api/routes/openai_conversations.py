"""`/v1/conversations`: the OpenAI Conversations surface over our durable conversations.

The official openai SDK's `client.conversations.*` and `client.conversations.items.*`
work with `base_url` pointed at chat-bff. A conversation here is the caller's own durable
conversation, with the same id as on `/api/conversations` (owner-scoped: another user's
id is 404). `client.responses.create(conversation=id, input=...)` runs a turn in it (see
`app.api.routes.openai_responses`). Items are the stored messages read as OpenAI items
(`app.api.conversation_items`): server tools are finished `mcp_call` items.

- create: `metadata` and up to 20 starting `items` (messages); retrieve; update replaces
  `metadata`; delete removes the conversation for good (like `DELETE
  /api/conversations/{id}?purge=true`).
- create and items create take an `Idempotency-Key` header (`app.api.idempotency`): a
  repeat with the same key and body answers the first response and adds nothing.
- items: list (`after`, `limit` 1-100, `order` asc|desc, with `first_id`, `last_id`,
  `has_more`), create (messages appended, not answered: no run starts), retrieve.
  Deleting an item is not offered: stored history is only ever superseded as a whole tail.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated, Literal, TypeVar

from fastapi import Path, Query
from fastapi.responses import JSONResponse
from pydantic import BaseModel

from app.api import idempotency
from app.api.conversation_items import (
    Item,
    cursor_messages,
    cursor_parts,
    item_in,
    items_of,
    ordered_items,
    past_cursor,
)
from app.api.conversation_removal import remove_conversation
from app.api.deps import (
    AttachmentsDep,
    CallerDep,
    DbDep,
    FilesDep,
    IdempotencyDep,
    RunsDep,
    ToolCatalogDep,
)
from app.api.idempotency import RequestKey
from app.api.routing import api_router
from app.api.schemas.openai_conversations import (
    ConversationCreateV1,
    ConversationDeletedV1,
    ConversationUpdateV1,
    ConversationV1,
    ItemListV1,
    ItemsCreateV1,
)
from app.domain.errors import Conflict, InvalidRequest, NotFound
from app.domain.messages import Message
from app.files.attachments import Admission, Attachments
from app.store.database import Database, Tx
from app.store.idempotency import IdempotencyKey, Outcome, kept_outcome, once
from app.translate.openai_responses.read import messages_from_responses_input

router = api_router(prefix="/v1/conversations", tags=["openai-compatible"])

ConversationId = Annotated[str, Path(max_length=256, description="Conversation id (`conv_...`).")]
ItemId = Annotated[str, Path(max_length=512, description="Item id.")]
Found = TypeVar("Found")
Created = TypeVar("Created", bound=BaseModel)


def _messages(raw: list[dict[str, object]]) -> list[Message]:
    messages = messages_from_responses_input(raw, None, field="items")
    if any(m.role not in ("user", "assistant") for m in messages):
        raise InvalidRequest("Only user and assistant messages can be added.", param="items")
    return messages


async def _admitted(
    raw: list[dict[str, object]], attachments: Attachments, owner_id: str
) -> Admission:
    """Messages to add, their files admitted as a turn's are (an inline `file_data`
    staged, then recorded as the caller's file with the messages and referred to by id; a
    `file_id` checked as theirs)."""
    return await attachments.stage(owner_id, _messages(raw), None)


async def _append(tx: Tx, added: Admission, conversation_id: str) -> None:
    for message in added.messages:
        await tx.messages.append(added.owner_id, conversation_id, message)
    await added.record(tx, conversation_id)


@router.post(
    "",
    response_model=ConversationV1,
    summary="Create a conversation (OpenAI).",
    openapi_extra=idempotency.OPENAPI,
)
async def create_conversation_v1(
    body: ConversationCreateV1,
    db: DbDep,
    attachments: AttachmentsDep,
    caller: CallerDep,
    idempotency_key: IdempotencyDep,
) -> ConversationV1 | JSONResponse:
    async def admit() -> Admission:
        return await _admitted(list(body.items or []), attachments, caller.user_id)

    async def create(tx: Tx, added: Admission) -> tuple[str, ConversationV1]:
        record = await tx.conversations.create(caller.user_id, metadata=body.metadata)
        await _append(tx, added, record.id)
        return record.id, ConversationV1.of(record)

    return await _adding(db, caller.user_id, idempotency_key, admit, create)


async def _adding(
    db: Database,
    owner_id: str,
    idempotency_key: RequestKey | None,
    admit: Callable[[], Awaitable[Admission]],
    create: Callable[[Tx, Admission], Awaitable[tuple[str, Created]]],
) -> Created | JSONResponse:
    """`create` (which names the conversation it is about) with the items `admit`
    stages, done once under the caller's Idempotency-Key (a repeat answers the first
    body and stores nothing: its key is read before any file is staged); staged files
    that no committed `create` recorded go."""
    key = None if idempotency_key is None else idempotency_key.of(owner_id)
    if key is not None and (kept := await kept_outcome(db, key)) is not None:
        return JSONResponse(kept.body, status_code=kept.status)
    added = await admit()
    try:
        if key is None:
            async with db.write() as tx:
                return (await create(tx, added))[1]
        return await _once(db, key, lambda tx: create(tx, added))
    finally:
        await added.settle()


async def _once(
    db: Database, key: IdempotencyKey, create: Callable[[Tx], Awaitable[tuple[str, BaseModel]]]
) -> JSONResponse:
    """`create` done once under the caller's Idempotency-Key: a repeat answers its body.
    `create` names the conversation its outcome is about (purged with it)."""

    async def kept(tx: Tx) -> Outcome:
        conversation_id, made = await create(tx)
        return Outcome(200, made.model_dump(mode="json"), conversation_id)

    outcome = await once(db, key, kept)
    return JSONResponse(outcome.body, status_code=outcome.status)


@router.get("/{conversation_id}", response_model=ConversationV1, summary="Retrieve (OpenAI).")
async def get_conversation_v1(
    conversation_id: ConversationId, db: DbDep, caller: CallerDep
) -> ConversationV1:
    async with db.read() as tx:
        return ConversationV1.of(await tx.conversations.get(caller.user_id, conversation_id))


@router.post(
    "/{conversation_id}", response_model=ConversationV1, summary="Update metadata (OpenAI)."
)
async def update_conversation_v1(
    conversation_id: ConversationId, body: ConversationUpdateV1, db: DbDep, caller: CallerDep
) -> ConversationV1:
    async with db.write() as tx:
        record = await tx.conversations.update(
            caller.user_id, conversation_id, metadata=body.metadata
        )
    return ConversationV1.of(record)


@router.delete(
    "/{conversation_id}", response_model=ConversationDeletedV1, summary="Delete (OpenAI)."
)
async def delete_conversation_v1(
    conversation_id: ConversationId, runs: RunsDep, db: DbDep, files: FilesDep, caller: CallerDep
) -> ConversationDeletedV1:
    await remove_conversation(conversation_id, runs, db, files, caller, purge=True)
    return ConversationDeletedV1(id=conversation_id)


@router.get("/{conversation_id}/items", response_model=ItemListV1, summary="List items (OpenAI).")
async def list_items_v1(
    conversation_id: ConversationId,
    db: DbDep,
    tools: ToolCatalogDep,
    caller: CallerDep,
    after: Annotated[str | None, Query(max_length=512, description="An item id.")] = None,
    limit: Annotated[int, Query(ge=1, le=100, description="Page size.")] = 20,
    order: Annotated[Literal["asc", "desc"], Query(description="asc: oldest first.")] = "desc",
) -> ItemListV1:
    chunk, more = await _page(db, caller, tools, conversation_id, after, limit, order)
    return ItemListV1.of(chunk, more)


async def _page(
    db: DbDep,
    caller: CallerDep,
    tools: ToolCatalogDep,
    cid: str,
    after: str | None,
    limit: int,
    order: str,
) -> tuple[list[Item], bool]:
    """A page read by keyset on (conversation, position): the cursor's own message, then
    the messages past it in `order` until the page and one more item are there (a message
    may yield no item or several). A tool call's item is found by the database looking
    inside the conversation's messages for the part; only the messages that hold it are
    read."""
    owner, descending = caller.user_id, order == "desc"
    collected: list[Item] = []
    beyond: int | None = None
    async with db.read() as tx:
        await tx.messages.check(owner, cid)
        if after is not None:
            cursor = after
            start = await _located(
                tx, owner, cid, cursor, lambda pairs: past_cursor(pairs, cursor, order, tools.knows)
            )
            if start is None:
                return [], False  # no such item: an empty last page, as it always was
            beyond, collected = start
        while len(collected) <= limit:
            want = limit + 1 - len(collected)
            batch = await tx.messages.window(
                owner, cid, beyond=beyond, descending=descending, limit=want
            )
            collected += ordered_items([r.message for r in batch], tools.knows, order)
            if len(batch) < want:
                break
            beyond = batch[-1].position
    return collected[:limit], len(collected) > limit


async def _located(
    tx: Tx,
    owner: str,
    cid: str,
    item_id: str,
    pick: Callable[[list[tuple[int, Message]]], Found | None],
) -> Found | None:
    """`pick` over the messages that may hold the item `item_id`, as (position, message):
    first those whose own item id it may be, then, when `pick` finds nothing there, those
    holding a tool part (a call, its output, its approval) it may name."""
    found = await tx.messages.current_of(owner, cid, cursor_messages(item_id))
    picked = pick([(r.position, r.message) for r in found])
    if picked is None:
        held = await tx.messages.holding(owner, cid, cursor_parts(item_id))
        picked = pick([(r.position, r.message) for r in held])
    return picked


@router.post(
    "/{conversation_id}/items",
    response_model=ItemListV1,
    summary="Add items (OpenAI).",
    openapi_extra=idempotency.OPENAPI,
)
async def create_items_v1(
    conversation_id: ConversationId,
    body: ItemsCreateV1,
    db: DbDep,
    attachments: AttachmentsDep,
    tools: ToolCatalogDep,
    caller: CallerDep,
    idempotency_key: IdempotencyDep,
) -> ItemListV1 | JSONResponse:
    async def admit() -> Admission:
        async with db.read() as tx:  # another user's id is 404 before any file is stored
            await tx.conversations.get(caller.user_id, conversation_id)
        return await _admitted(list(body.items), attachments, caller.user_id)

    async def create(tx: Tx, added: Admission) -> tuple[str, ItemListV1]:
        record = await tx.conversations.get(caller.user_id, conversation_id)
        if record.active_run_id is not None:
            raise Conflict(
                "A run of this conversation is active; add items when it ends.",
                code="run_active",
                run_id=record.active_run_id,
            )
        await _append(tx, added, conversation_id)
        return conversation_id, ItemListV1.of(items_of(added.messages, tools.knows), False)

    return await _adding(db, caller.user_id, idempotency_key, admit, create)


@router.get(
    "/{conversation_id}/items/{item_id}",
    response_model=dict[str, object],
    summary="Retrieve an item (OpenAI).",
)
async def get_item_v1(
    conversation_id: ConversationId,
    item_id: ItemId,
    db: DbDep,
    tools: ToolCatalogDep,
    caller: CallerDep,
) -> Item:
    owner = caller.user_id
    async with db.read() as tx:
        await tx.messages.check(owner, conversation_id)
        item = await _located(
            tx, owner, conversation_id, item_id, lambda pairs: item_in(pairs, item_id, tools.knows)
        )
    if item is None:
        raise NotFound("No such item in this conversation.", code="item_not_found")
    return item
