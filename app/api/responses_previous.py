"""`previous_response_id` on `POST /v1/responses`: which stored response a request
continues, and whether it may.

A stored response is a turn of a conversation (a `background` one's too: of the hidden
conversation holding it), so continuing it is that conversation's next turn, stored the
same way (retrieved, cancelled, chained in its turn):

    previous_response_id names ...             answer
    the caller's stored response, the latest   a turn of its conversation: the context is
      of its conversation                      the history up to and including it
    one the conversation went on after (a      400 `previous_response_not_latest`, naming
      fork)                                    the latest response: a conversation here
                                               is one line of turns; forking it in place
                                               (the regenerate machinery) would hide the
                                               turns its later responses stand on
    unknown, another user's, or stateless      400 `previous_response_not_found`, OpenAI's
      (never stored)                           status, code and words; the answer is the
                                               same whoever owns the id
    sent with `conversation`                   400 `mutually_exclusive_parameters`, as
                                               OpenAI answers

"Latest" means the conversation's last current message is the response's own (its run
wrote it): a message appended after it, or a later turn, makes it a fork. For a new user
message the check runs in the transaction that claims the conversation, so two requests
continuing the same response cannot both pass; a running response is the conversation's
active run, so continuing it is 409 `run_active` like any turn of a busy conversation.

The conversation keeps its own system prompt: `instructions` equal to it are accepted (a
client sending its instructions on every turn, as the Agents SDK does); other text is a
400, as with `conversation`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from app.api.idempotency import RequestKey
from app.api.idempotent_turns import KeepOutcome, start_once
from app.api.responses_stored import response_id, stored_run
from app.domain.errors import Conflict, InvalidRequest, NotFound
from app.domain.identity import Caller
from app.domain.parts import FINAL_TOOL_STATUSES
from app.runs.handle import RunHandle
from app.runs.journal import Prepare
from app.runs.turns import Runs, ToolResult
from app.store.database import Database, Tx
from app.store.idempotency import Outcome
from app.store.records import MessageRecord
from app.translate.openai_responses.read import function_output

PARAM = "previous_response_id"


@dataclass(frozen=True, slots=True)
class Previous:
    """The stored response a request continues."""

    response_id: str
    run_id: str
    conversation_id: str


async def resolve(
    db: Database, owner_id: str, value: str, *, conversation: Any, instructions: str | None
) -> Previous:
    """The caller's stored response named `value`; 400 as OpenAI answers otherwise."""
    if conversation is not None:
        raise InvalidRequest(
            "Mutually exclusive parameters. Ensure you are only providing one of: "
            "'previous_response_id' or 'conversation'.",
            code="mutually_exclusive_parameters",
        )
    try:
        record = await stored_run(db, owner_id, value)
        if record.conversation_id is None:  # `stored_run` answers conversations' runs only
            raise NotFound("Not a stored response.")
        async with db.read() as tx:
            held_in = await tx.conversations.get(owner_id, record.conversation_id)
    except NotFound:
        raise InvalidRequest(
            f"Previous response with id '{value[:64]}' not found. Only responses of a "
            "`conversation` or made in the `background` are stored here: send the "
            "history as input items otherwise.",
            param=PARAM,
            code="previous_response_not_found",
        ) from None
    if instructions is not None and instructions != held_in.system_prompt:
        raise InvalidRequest(
            "instructions must be those of the conversation the previous response is a "
            "turn of (its system prompt), or left out: the conversation keeps them.",
            param="instructions",
        )
    return Previous(value, record.id, held_in.id)


def still_latest(owner_id: str, previous: Previous) -> Prepare:
    """The claim's check (`Runs.send(prepare=)`) that `previous` is still the latest."""

    async def check(tx: Tx) -> bool:
        await _latest(tx, owner_id, previous)
        return True

    return check


async def answered_calls(
    db: Database, owner_id: str, previous: Previous, items: list[Any]
) -> list[ToolResult]:
    """`items` (function_call_output items only) as results for the calls `previous`
    waits on, every one of them answered (OpenAI's rule and words)."""
    results: list[ToolResult] = []
    for index, item in enumerate(items):
        where = f"input[{index}]"
        if not isinstance(item, Mapping) or item.get("type") != "function_call_output":
            raise InvalidRequest(
                f"{where}: continuing a response's function calls, the input holds only "
                "their function_call_output items; send the next user message in the "
                "request after.",
                param=where,
            )
        call_id, result = function_output(item, where)
        if any(r.tool_call_id == call_id for r in results):
            raise InvalidRequest(
                f"{where}: a second output for function call {call_id}.", param=where
            )
        results.append(ToolResult(call_id, "success", result))
    async with db.read() as tx:
        last = await _latest(tx, owner_id, previous)
    waiting = {
        p.id
        for p in last.message.tool_parts()
        if p.data.status not in FINAL_TOOL_STATUSES and p.data.approvalId is None
    }
    for index, answer in enumerate(results):
        if answer.tool_call_id not in waiting:
            raise InvalidRequest(
                f"No tool call found for function call output with call_id {answer.tool_call_id}.",
                param=f"input[{index}]",
            )
    missing = sorted(waiting - {r.tool_call_id for r in results})
    if missing:
        raise InvalidRequest(f"No tool output found for function call {missing[0]}.", param="input")
    return results


async def continue_calls(
    db: Database,
    runs: Runs,
    caller: Caller,
    previous: Previous,
    items: list[Any],
    key: RequestKey | None,
) -> RunHandle | Outcome:
    """The previous response's calls answered with `items` and its turn continued (the
    path of `POST /api/conversations/{id}/tool-results`); under an Idempotency-Key a
    repeat answers the first one's continuation."""
    cid = previous.conversation_id

    async def start(keep: KeepOutcome | None) -> RunHandle:
        results = await answered_calls(db, caller.user_id, previous, items)

        async def kept(tx: Tx, run_id: str | None) -> None:
            if run_id is None:  # rolls the results back: nothing changed
                raise Conflict(
                    "The previous response also waits on approvals: answer them "
                    "(mcp_approval_response items) first.",
                    code="approval_pending",
                )
            if keep is not None:
                await keep(tx, Outcome(200, {"run_id": run_id}, cid))

        run = await runs.submit_tool_results(caller, cid, results, keep=kept)
        if run is None:  # `kept` refuses, rolled back, a turn that would not continue
            raise Conflict(
                "The previous response's turn did not continue.", code="approval_pending"
            )
        return run

    if key is None:
        return await start(None)
    return await start_once(db, key.of(caller.user_id), start)


async def check_latest(db: Database, owner_id: str, previous: Previous) -> None:
    """400 unless `previous` is still the latest of its conversation."""
    async with db.read() as tx:
        await _latest(tx, owner_id, previous)


def outputs_only(value: Any) -> list[Any] | None:
    """The input items when they start with a function_call_output item (the calls of
    the previous response answered), else None (a user message, approvals)."""
    if isinstance(value, list) and value:
        first = value[0]
        if isinstance(first, Mapping) and first.get("type") == "function_call_output":
            return value
    return None


async def _latest(tx: Tx, owner_id: str, previous: Previous) -> MessageRecord:
    """The conversation's last current message, when it is `previous`'s; else 400."""
    last = await tx.messages.window(
        owner_id, previous.conversation_id, beyond=None, descending=True, limit=1
    )
    if last and last[0].run_id == previous.run_id:
        return last[0]
    later = last[0].run_id if last else None
    hint = (
        f"continue from the latest, '{response_id(later)}', or "
        if later is not None
        else "continue the conversation, or "
    )
    raise InvalidRequest(
        f"Response '{previous.response_id}' is not the latest of its conversation: "
        f"{hint}send the history you want as input items (a conversation here is one "
        "line of turns; it is not forked).",
        param=PARAM,
        code="previous_response_not_latest",
    )
