"""Background responses (`POST /v1/responses` with `background: true`).

A background response must outlive its request and be retrievable, streamable from any
sequence number and cancellable from any instance, also after a restart: that is what a
conversation's run already is (its events stored, its status on its row, cancel reaching
the instance that runs it). So a background response is a conversation turn:

    conversation given      -> a turn of it, answered at once (status `in_progress`)
    no conversation         -> a new conversation holds the request (`instructions` its
                               system prompt, the input items but the last its history)
                               and the last item, a user message, starts its turn
    store: false            -> 400: nothing could be retrieved (OpenAI answers the same)

The conversation made for a request without one is the caller's (retrievable,
purgeable) but of kind `background_response`, which no conversation list shows (OpenAI's
background responses make no conversation; a sidebar must not grow one). It is still
marked `metadata.background_response: "true"`, and a Response names it in
`conversation`, so a client may continue it.
"""

from __future__ import annotations

from app.domain.errors import InvalidRequest
from app.domain.messages import Message
from app.domain.parts import Part
from app.store.database import Database

MARK = {"background_response": "true"}


def refuse_unstored(background: bool | None, store: bool | None) -> None:
    if background and store is False:
        raise InvalidRequest("Background mode requires store=true.", param="store")


async def hold_request(
    db: Database, owner_id: str, history: list[Message], model: str | None
) -> tuple[str, str | list[Part]]:
    """A new conversation holding the request's history but its last message; returns its
    id and the content of that last message (the user's, which the turn answers)."""
    system = "\n\n".join(m.text() for m in history if m.role == "system") or None
    said = [m for m in history if m.role != "system"]
    if not said or said[-1].role != "user":
        raise InvalidRequest(
            "A background response's last input item must be a user message.", param="input"
        )
    async with db.write() as tx:
        record = await tx.conversations.create(
            owner_id,
            model=model,
            system_prompt=system,
            metadata=dict(MARK),
            kind="background_response",
        )
        for message in said[:-1]:
            await tx.messages.append(owner_id, record.id, message)
    return record.id, said[-1].content


async def let_go(db: Database, owner_id: str, conversation_id: str) -> None:
    """The conversation `hold_request` made, removed when its turn could not start (an
    unknown model, a budget spent): a refused request leaves nothing behind."""
    async with db.write() as tx:
        await tx.conversations.purge(owner_id, conversation_id)
