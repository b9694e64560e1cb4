"""Server approvals over `/api/chat`, the way AIKit's GenUI chat answers a card.

A stateless turn stores nothing, so a `confirm` tool's pending approval reaches the client
in the answer, and the client's decision comes back in its next request:

Out (the turn pauses): the typed parts hold the server tool's part in `waitingConfirmation`
with `data.approvalId`, the message says `finish_reason: "requires_action"`. When the
request declares the deployment's confirmation tool as a client tool (default
`approval_request`, AIKit's GenUI reference name), the Chat Completions view answers the
approval as a call of that tool, with the server call's id and arguments
`{summary, approval_id, tool, arguments}`: an unchanged GenUI client renders its own card.

In (the next request sends the history back, decided): a claim is a tool part of the last
assistant message that names an approval, either

    the confirmation tool's call (`args.approval_id`, the server call in `args.tool` /
    `args.arguments`) with its result `{approved: true|false, reason?}` (a `role: tool`
    message, or the typed part's `result`), or status `cancelled` (rejected);
    the server tool's own typed part (`data.approvalId`) with the same result or status.

Every claim is checked before anything is decided (`ApprovalService.check_claim`: this
caller's pending approval asked for this very call id, in a stateless turn, with the same
name and argument digest; else 404 / 409), then each is decided once through the approval
service (audited `via: "chat"`): the tool runs or is rejected, the claim's part becomes the
server tool's part with its outcome, and the turn continues from there; the run's stream
starts with a `part_update` for each. Parts of earlier messages that name a decided
approval become the stored outcome (so the model sees what really happened, whatever the
client kept); a pending approval left undecided in the last message is 409
`approval_pending`: decide it first.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from app.domain.errors import Conflict
from app.domain.events import PartChange, PartUpdateCause
from app.domain.identity import Caller
from app.domain.messages import Message
from app.domain.parts import FINAL_TOOL_STATUSES, Part, ToolPart, tool_part
from app.toolruntime.approvals import ApprovalService


@dataclass(frozen=True)
class _Claim:
    message_index: int
    part: ToolPart
    approval_id: str
    tool_name: str
    args: dict[str, Any] | None
    approved: bool | None  # None: the history does not decide it
    reason: str | None


@dataclass
class ChatApprovals:
    """One request's claims: `settle` decides them; `history` is then the updated history."""

    approvals: ApprovalService
    caller: Caller
    confirm_tool: str | None
    history: list[Message] = field(default_factory=list)
    via: str = "chat"  # how the human answered, for the audit (`responses`: /v1/responses)

    async def settle(self, history: list[Message]) -> tuple[list[Message], list[PartChange]]:
        self.history = history
        last = _last_assistant(history)
        claims = [c for i, m in enumerate(history) for c in self._claims(i, m)]
        fresh = [c for c in claims if c.message_index == last and c.approved is not None]
        for claim in fresh:
            await self.approvals.check_claim(
                self.caller,
                claim.approval_id,
                tool_call_id=claim.part.id,
                tool_name=claim.tool_name,
                args=claim.args,
            )
        updated: dict[tuple[int, str], ToolPart] = {}
        changes: list[PartChange] = []
        for claim in fresh:
            result = await self.approvals.decide(
                self.caller,
                claim.approval_id,
                "approve" if claim.approved else "reject",
                reason=claim.reason,
                via=self.via,
            )
            assert result.part is not None  # a stateless decision always builds its part
            updated[(claim.message_index, claim.part.id)] = result.part
            cause: PartUpdateCause = "approval_approved" if claim.approved else "approval_rejected"
            message_id = history[claim.message_index].id
            changes.append(PartChange(message_id=message_id, part=result.part, cause=cause))
        for claim in claims:
            if claim.approved is not None and claim.message_index == last:
                continue
            stored = await self.approvals.decided_part(
                self.caller, claim.approval_id, claim.part.id
            )
            if stored is not None:
                updated[(claim.message_index, claim.part.id)] = stored
            elif claim.message_index == last and claim.part.data.status not in FINAL_TOOL_STATUSES:
                raise Conflict(
                    "A tool call in the last message still waits for its approval; send "
                    "the decision (or decide it through /api/approvals) first.",
                    code="approval_pending",
                    approval_id=claim.approval_id,
                )
        self.history = [_replaced(i, m, updated) for i, m in enumerate(history)]
        return self.history, changes

    def _claims(self, index: int, message: Message) -> list[_Claim]:
        if message.role != "assistant":
            return []
        return [c for p in message.tool_parts() if (c := self._claim(index, p)) is not None]

    def _claim(self, index: int, part: ToolPart) -> _Claim | None:
        data = part.data
        args = data.args or {}
        if data.toolName == self.confirm_tool and isinstance(args.get("approval_id"), str):
            approval_id: str = args["approval_id"]
            name = args.get("tool")
            server_args = args.get("arguments")
            tool_name = name if isinstance(name, str) else ""
            call_args = server_args if isinstance(server_args, dict) else None
        elif data.approvalId is not None and self.approvals.runtime.knows(data.toolName):
            approval_id, tool_name, call_args = data.approvalId, data.toolName, data.args
        else:
            return None
        approved, reason = _decision(part)
        return _Claim(index, part, approval_id, tool_name, call_args, approved, reason)

    def confirmation_view(self, parts: list[Part]) -> list[Part]:
        """The parts as the Chat Completions view shows them: each pending approval as a
        call of the client's confirmation tool (when the request declared one)."""
        if self.confirm_tool is None:
            return parts
        return [_as_confirmation(p, self.confirm_tool) for p in parts]


def _decision(part: ToolPart) -> tuple[bool | None, str | None]:
    """What the client's part says a human decided: approved, rejected or nothing."""
    result = part.data.result
    reason = result.get("reason") if isinstance(result, dict) else None
    reason = reason if isinstance(reason, str) else None
    final = part.data.status in FINAL_TOOL_STATUSES
    if final and isinstance(result, dict) and isinstance(result.get("approved"), bool):
        return result["approved"], reason
    if part.data.status == "cancelled":
        return False, reason or "Rejected in the chat."
    return None, None


def _as_confirmation(part: Part, confirm_tool: str) -> Part:
    if not (
        isinstance(part, ToolPart)
        and part.data.approvalId is not None
        and part.data.status == "waitingConfirmation"
    ):
        return part
    args = {
        "summary": part.data.bodyContent or f"Run {part.data.toolName}?",
        "approval_id": part.data.approvalId,
        "tool": part.data.toolName,
        "arguments": part.data.args or {},
    }
    return tool_part(
        tool_call_id=part.id,
        tool_name=confirm_tool,
        status="waitingConfirmation",
        args=args,
        approval_id=part.data.approvalId,
    )


def _last_assistant(history: list[Message]) -> int:
    for index in range(len(history) - 1, -1, -1):
        if history[index].role == "assistant":
            return index
    return -1


def _replaced(index: int, message: Message, updated: dict[tuple[int, str], ToolPart]) -> Message:
    if not any(key[0] == index for key in updated):
        return message
    content = [
        updated.get((index, p.id), p) if isinstance(p, ToolPart) else p for p in message.parts()
    ]
    return message.model_copy(update={"content": content})
