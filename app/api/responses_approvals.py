"""Approvals on the Responses wire: `mcp_approval_response` input items decide them.

A `confirm` server tool pauses the turn with an `mcp_approval_request` item (its id is
the approval's; no `mcp_call` is shown before the call is known to run). The client
answers with
`{type: "mcp_approval_response", approval_request_id, approve, reason?}` and the turn
continues in that same request, its response starting with the decided `mcp_call`
(`app.api.encoders.responses_tools`). Every rule of `POST /api/approvals/{id}` holds,
through the same approval service, audited `via: "responses"`:

- stateless (no `conversation`): the client sends its history back (`input +=
  response.output`) followed by the answer. The request item does not name the call: its
  call id is the stored approval's (an approval that is not this caller's is 404 here
  already). The claim is then checked and decided by
  `ChatApprovals`, the rules `/api/chat` applies: this caller's approval (else 404
  `approval_not_found`), asked in a stateless turn for this very call id, still pending
  (409 `already_decided` for a replayed answer) and unexpired (409 `approval_expired`),
  with the call's name and arguments hashing to the digest it was asked with (409
  `approval_args_mismatch`). An answer on a call that is no server tool of ours is 404.
- in a `conversation`: the stored call is the truth, so the input is only the answers.
  Each names an approval of this conversation (else 404) that can still be decided (else
  409), every approval pending in it is answered (else 409 `approval_pending`): all checked
  before anything is decided; then each is decided once
  (the service re-checks the stored call and its digest) and the conversation resumes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from app.api.chat_approvals import ChatApprovals
from app.domain.errors import Conflict, InvalidRequest, NotFound
from app.domain.events import PartChange
from app.domain.identity import Caller
from app.domain.messages import Message
from app.runs.handle import RunHandle
from app.runs.turns import PrepareHistory, Runs
from app.toolruntime.approvals import ApprovalService

VIA = "responses"


def _not_found() -> NotFound:
    return NotFound("Approval not found.", code="approval_not_found")


def answers_approvals(value: Any) -> bool:
    """Whether the input holds any `mcp_approval_response` item."""
    return isinstance(value, list) and any(
        isinstance(i, Mapping) and i.get("type") == "mcp_approval_response" for i in value
    )


def stateless_claims(approvals: ApprovalService, caller: Caller) -> PrepareHistory:
    """The history preparation of a stateless turn: decide the approvals it answers."""
    claims = ChatApprovals(approvals, caller, None, via=VIA)

    async def settle(history: list[Message]) -> tuple[list[Message], list[PartChange]]:
        for message in history:
            for part in message.tool_parts() if message.role == "assistant" else []:
                if part.data.approvalId is None:
                    continue
                if not approvals.runtime.knows(part.data.toolName):
                    raise _not_found()  # no server tool of ours asked for it
                if part.id == part.data.approvalId:  # read from an mcp_approval_request
                    try:
                        record = await approvals.get(caller, part.data.approvalId)
                    except NotFound:
                        raise _not_found() from None
                    part.id = part.data.toolCallId = record.tool_call_id
        return await claims.settle(history)

    return settle


@dataclass(frozen=True)
class _Answer:
    approval_id: str
    approve: bool
    reason: str | None


def _answers(items: list[Any]) -> list[_Answer]:
    answers: list[_Answer] = []
    for index, item in enumerate(items):
        where = f"input[{index}]"
        if not isinstance(item, Mapping) or item.get("type") != "mcp_approval_response":
            raise InvalidRequest(
                f"{where}: a conversation turn that answers approvals holds only "
                "mcp_approval_response items (the conversation keeps the calls); send the "
                "next message after it.",
                param=where,
            )
        approval_id, approve, reason = (
            item.get("approval_request_id"),
            item.get("approve"),
            item.get("reason"),
        )
        if not isinstance(approval_id, str) or not approval_id:
            raise InvalidRequest(f"{where} needs `approval_request_id`.", param=where)
        if not isinstance(approve, bool):
            raise InvalidRequest(f"{where} needs `approve` as true or false.", param=where)
        if reason is not None and not isinstance(reason, str):
            raise InvalidRequest(f"{where} has a `reason` that is not a string.", param=where)
        if any(a.approval_id == approval_id for a in answers):
            raise InvalidRequest(f"{where} answers {approval_id!r} a second time.", param=where)
        answers.append(_Answer(approval_id, approve, reason or None))
    return answers


async def decide_in_conversation(
    approvals: ApprovalService,
    runs: Runs,
    caller: Caller,
    conversation_id: str,
    items: list[Any],
) -> RunHandle:
    """Decide the conversation's approvals the input answers; the run that continues it."""
    answers = _answers(items)
    settled: set[str] = set()  # decided before, their outcome lost: closed now
    for answer in answers:
        record = await approvals.get(caller, answer.approval_id)  # another user's: 404
        if record.conversation_id != conversation_id:
            raise _not_found()
        if await approvals.settle_lost(caller, record) is not None:
            if record.status != ("approved" if answer.approve else "rejected"):
                raise Conflict(  # the card is settled; the decision stays the one taken
                    "This approval was already decided.",
                    code="already_decided",
                    decision=record.status,
                )
            settled.add(record.id)
            continue
        approvals.ensure_open(record)  # decided or expired: 409 before anything is decided
    answered = {a.approval_id for a in answers}
    waiting = [
        a.id
        for a in await approvals.inbox(caller)
        if a.conversation_id == conversation_id and a.id not in answered
    ]
    if waiting:
        raise Conflict(
            "Another approval of this conversation still waits; answer every pending "
            "approval in the same request.",
            code="approval_pending",
            approval_id=waiting[0],
        )
    for answer in (a for a in answers if a.approval_id not in settled):
        await approvals.decide(
            caller,
            answer.approval_id,
            "approve" if answer.approve else "reject",
            reason=answer.reason,
            via=VIA,
        )
    handle = await runs.resume(caller, conversation_id)
    if handle is None:
        raise Conflict(
            "The approvals are decided; the turn continues once the client tool results "
            "it waits for are sent (POST /api/conversations/{id}/tool-results).",
            code="tool_results_pending",
        )
    return handle
