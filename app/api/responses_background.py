"""Background responses (`POST /v1/responses` with `background: true`).

A background response must outlive its request and be retrievable, streamable from any
sequence number and cancellable from any instance, also after a restart: that is what a
conversation's run already is (its events stored, its status on its row, cancel reaching
the instance that runs it). So a background response is a conversation turn:

    conversation given      -> a turn of it, answered at once (status `in_progress`)
    no conversation         -> a new conversation holds the request (`instructions` its
                               system prompt, the input items but the last its history)
                               and the last item, a user message, starts its turn;
                               input ending with function_call_output items: all of
                               it is held and the turn continues from those outputs
    store: false            -> 400: nothing could be retrieved (OpenAI answers the same)

The conversation made for a request without one is the caller's (retrievable,
purgeable) but of kind `background_response`, which no conversation list shows (OpenAI's
background responses make no conversation; a sidebar must not grow one), until the
caller sends it a message of their own (`Runs.send`): then it is a chat like the others. It is still
marked `metadata.background_response: "true"`, and a Response names it in
`conversation`, so a client may continue it.
"""

from __future__ import annotations

from app.domain.errors import InvalidRequest
from app.domain.messages import Message
from app.domain.parts import FINAL_TOOL_STATUSES, Part
from app.store.database import Database

MARK = {"background_response": "true"}


def refuse_unstored(background: bool | None, store: bool | None) -> None:
    if background and store is False:
        raise InvalidRequest("Background mode requires store=true.", param="store")


async def hold_request(
    db: Database, owner_id: str, history: list[Message], model: str | None
) -> tuple[str, str | list[Part] | None]:
    """A new conversation holding the request's history but its last message; returns its
    id and the content of that last message (the user's, which the turn answers). When the
    input ends with the outputs of the client's tool calls, the conversation holds all of
    it and the content is None: the turn continues from those outputs."""
    system = "\n\n".join(m.text() for m in history if m.role == "system") or None
    said = [m for m in history if m.role != "system"]
    if said and answered_tools(said[-1]):  # function_call_output items: continue them
        kept, content = said, None
    elif said and said[-1].role == "user":
        kept, content = said[:-1], said[-1].content
    else:
        raise InvalidRequest(
            "A background response's last input item must be a user message or a "
            "function_call_output.",
            param="input",
        )
    async with db.write() as tx:
        record = await tx.conversations.create(
            owner_id,
            model=model,
            system_prompt=system,
            metadata=dict(MARK),
            kind="background_response",
        )
        for message in kept:
            await tx.messages.append(owner_id, record.id, message)
    return record.id, content


def answered_tools(message: Message) -> bool:
    """An assistant message whose tool calls all carry the client's output."""
    calls = message.tool_parts() if message.role == "assistant" else []
    return bool(calls) and all(p.data.status in FINAL_TOOL_STATUSES for p in calls)


async def let_go(db: Database, owner_id: str, conversation_id: str) -> None:
    """The conversation `hold_request` made, removed when its turn could not start (an
    unknown model, a budget spent): a refused request leaves nothing behind."""
    async with db.write() as tx:
        await tx.conversations.purge(owner_id, conversation_id)
