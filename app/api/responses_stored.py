"""Stored responses: `GET /v1/responses/{id}` retrieves one, or replays and resumes its
stream (`?stream=true&starting_after=N`).

A response id names its run (`resp_<hex>` is the run `run_<hex>`), so a response is as
durable as its run: the responses of a `conversation` (a `background` one is a
conversation's too) are stored with their events and survive a restart or another
instance; other stateless responses are never stored, whatever `store` says, and are 404
`response_not_found` like an unknown id or another user's.

The Responses encoder is deterministic, so the stream is rebuilt from the run's stored
events with the same frames and `sequence_number`s as the live one: `starting_after=N`
drops the frames up to N and follows the run live from there; without it the stream is
replayed from its start. The echo of a retrieved response is what the run kept: its
client tools and tool choice, its model and conversation (sampling parameters and
`metadata` are not kept).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from app.api.encoders.responses import ResponsesEncoder
from app.api.streaming import Encoded, Encoder
from app.domain.errors import NotFound
from app.domain.events import SequencedEvent
from app.domain.stream import NamedToolChoice, ToolChoice, ToolSpec
from app.runs.turns import Runs
from app.store.database import Database
from app.store.records import RunRecord
from app.translate.openai_chat.read import tool_choice_from_openai

PREFIX = "resp_"


def response_id(run_id: str) -> str:
    return PREFIX + run_id.removeprefix("run_")


def tool_echo(tools: list[ToolSpec], choice: ToolChoice | None) -> dict[str, Any]:
    """The `tools` and `tool_choice` a Response repeats, in Responses shapes."""
    tool_choice: Any = choice
    if isinstance(choice, NamedToolChoice):
        tool_choice = {"type": "function", "name": choice.name}
    return {
        "tool_choice": tool_choice,
        "tools": [
            {
                "type": "function",
                "name": t.name,
                "description": t.description or None,
                "parameters": t.parameters,
                "strict": False,
            }
            for t in tools
        ],
    }


def _not_found() -> NotFound:
    return NotFound(
        "No stored response with this id. Only responses that are turns of a `conversation` "
        "or `background` are stored; another stateless response cannot be retrieved.",
        code="response_not_found",
    )


async def stored_run(db: Database, owner_id: str, value: str) -> RunRecord:
    """The caller's durable run behind a response id; 404 for anything else."""
    if not value.startswith(PREFIX) or len(value) > 64:
        raise _not_found()
    try:
        async with db.read() as tx:
            record = await tx.runs.get(owner_id, "run_" + value.removeprefix(PREFIX))
    except NotFound:
        raise _not_found() from None
    if record.conversation_id is None:  # pragma: no cover - only conversation runs are stored
        raise _not_found()
    return record


def stored_encoder(record: RunRecord, held_tools: frozenset[str]) -> ResponsesEncoder:
    """The encoder a live stream of this run had (ids, tools, model), rebuilt; `held_tools`
    are the deployment's tools that may pause (`ToolCatalog.may_pause`), as the live
    encoder had them."""
    options = record.options or {}
    tools = [ToolSpec.model_validate(t) for t in options.get("client_tools", [])]
    raw = options.get("tool_choice")
    choice = tool_choice_from_openai({"function": raw} if isinstance(raw, dict) else raw)
    assert record.conversation_id is not None
    wire = options.get("wire") or {}
    return ResponsesEncoder(
        response_id=response_id(record.id),
        model=record.model,
        created_at=int(record.created_at.timestamp()),
        client_tools=frozenset(t.name for t in tools),
        held_tools=held_tools,
        client_submissions=wire.get("client_tool_items") == "submission_request",
        request=tool_echo(tools, choice)
        | {"conversation": {"id": record.conversation_id}}
        | ({"background": True} if wire.get("background") == "true" else {}),
    )


def after(encoder: ResponsesEncoder, starting_after: int) -> Encoder:
    """The encoder's frames with a `sequence_number` above `starting_after` (every frame
    is one `event:`/`data:` block numbered in order, so the count tells the numbers)."""

    def encode(batch: list[SequencedEvent]) -> Encoded:
        first = encoder.last_sequence_number + 1
        frames = encoder.encode(batch).split(b"\n\n")[:-1]
        skip = max(0, starting_after + 1 - first)
        return [frame + b"\n\n" for frame in frames[skip:]]

    return encode


async def encode_until(
    encoder: ResponsesEncoder, batches: AsyncIterator[list[SequencedEvent]], last_seq: int
) -> None:
    """Feed the encoder the run's events up to `last_seq` (what is stored or logged now),
    without waiting for the rest of a running run."""
    if last_seq <= 0:
        return
    try:
        async for batch in batches:
            encoder.encode(batch)
            if batch[-1].seq >= last_seq:
                return
    finally:
        close = getattr(batches, "aclose", None)
        if close is not None:  # stop following a running run at once
            await close()


async def as_it_stands(runs: Runs, record: RunRecord, held_tools: frozenset[str]) -> dict[str, Any]:
    """The stored response's Response object from the events its run has logged so far."""
    encoder = stored_encoder(record, held_tools)
    cid = record.conversation_id
    _, last_seq = await runs.position(record.owner_id, record.id, cid)
    events = runs.follow(record.owner_id, record.id, conversation_id=cid)
    await encode_until(encoder, events, last_seq)
    return encoder.snapshot().model_dump(mode="json")
