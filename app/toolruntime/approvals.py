"""Deciding a pending approval: the only way a `confirm` tool ever runs.

    decide(caller, approval_id, approve | reject, args?, reason?)
      unknown or another owner's id           -> 404 approval_not_found
      already decided                          -> 409 already_decided (the tool never reruns;
                                                  with `replay`, the same decision sent
                                                  again is answered where the call stands,
                                                  for the 409 to carry)
      past its expiry                          -> 409 approval_expired
      the stored tool part no longer matches   -> 409 approval_args_mismatch
      edited args that fail validation         -> 422 invalid_arguments (still pending)
      otherwise: claim it with a conditional UPDATE (exactly one decider wins), commit,
      then run the tool once (approve) or build the rejection result (reject), write the
      result into the stored tool part and the audit log, and tell the caller whether the
      conversation can continue.

Expiry answers 409 rather than 410: like `already_decided` it says "this approval can no
longer be decided", and a client handles both the same way (reload the conversation).
The claim is committed before the tool runs, so a crash in between leaves the approval
decided and the tool not run: at most once, never twice.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from app.domain.errors import ChatBffError, Conflict, NotFound
from app.domain.events import PartChange, PartUpdateCause
from app.domain.identity import Caller
from app.domain.parts import ToolPart, tool_part
from app.domain.tooling import BackgroundStarted, ToolOutcome
from app.store.repos.approvals import ApprovalRecord, approval_not_found
from app.toolruntime.asking import approval_answer
from app.toolruntime.decision_replay import DECIDED, Decision, lost_outcome, same_decision
from app.toolruntime.expired_parts import expire_due
from app.toolruntime.outcomes import REJECTED, error_outcome, stored_site
from app.toolruntime.runtime import ServerToolRuntime
from app.toolruntime.settled_parts import CardAudit, settle_card
from app.toolruntime.stored_parts import find_part, rewrite_part, standing, updated_part
from app.tools.base import ServerTool, visible_args
from app.tools.pinning import InvalidArguments, args_hash, pin_and_validate


def recorded(outcome: ToolOutcome | BackgroundStarted) -> tuple[str, Any]:
    """What the approval keeps of its call's outcome: an approved long-running call is
    `background`, naming its job (a replay answers with the same job)."""
    if isinstance(outcome, BackgroundStarted):
        return "background", {"background_job": outcome.job_id}
    return outcome.status, outcome.result


class _Recorded(Exception):
    """The call's outcome is stored already: the unit writes nothing."""


class Unprocessable(ChatBffError):
    status = 422
    code = "invalid_arguments"


@dataclass(frozen=True)
class DecisionResult:
    approval: ApprovalRecord
    part: ToolPart | None
    # True when no tool part of the assistant message waits any more: the run may resume.
    ready_to_resume: bool
    # A decision sent again: the run that already continued the conversation, if one did.
    continued_by: str | None = None
    # The approval was already decided as this request asks (a client's retry): the answer
    # is still 409 `already_decided`, carrying where the call stands.
    replayed: bool = False
    # Sent again: the conversation went on with a new user message, so no run continues
    # the call (`app.toolruntime.stored_parts.Standing`).
    moved_on: bool = False


def _now() -> datetime:
    return datetime.now(UTC)


class ApprovalService:
    """Built once per service over the tool runtime (which runs an approved call)."""

    def __init__(
        self, runtime: ServerToolRuntime, *, confirmation_tool: str = "approval_request"
    ) -> None:
        self.runtime = runtime
        self.db = runtime.db
        # The client tool a stateless chat answers a pending approval as (AIKit GenUI).
        self.confirmation_tool = confirmation_tool

    async def inbox(self, caller: Caller) -> list[ApprovalRecord]:
        async with self.db.read() as tx:
            return await tx.approvals.pending(caller.user_id, now=_now())

    async def get(self, caller: Caller, approval_id: str) -> ApprovalRecord:
        async with self.db.read() as tx:
            return await tx.approvals.get(caller.user_id, approval_id)

    async def decide(
        self,
        caller: Caller,
        approval_id: str,
        decision: Decision,
        *,
        args: dict[str, Any] | None = None,
        reason: str | None = None,
        via: str = "api",
        replay: bool = False,
    ) -> DecisionResult:
        """`via` says how the human decided (`api`, `typed` in the chat), for the audit.
        `replay`: the same decision on an approval already decided so answers where the
        call stands, for a client that retries (see app.toolruntime.decision_replay)."""
        owner = caller.user_id
        record = await self.get(caller, approval_id)
        if replay and record.status in DECIDED:
            return await self._replayed(caller, record, decision, args, reason)
        self._refuse_if_closed(record)
        tool = self.runtime.catalog.permitted(record.tool_name, caller, record.model_id)
        if tool is None:
            raise Conflict(
                f"The tool `{record.tool_name}` is no longer available.", code="tool_unavailable"
            )
        await self._check_part(record)
        final_args = record.args
        model = None
        if decision == "approve":
            source = args if args is not None else record.args
            try:
                model, final_args = pin_and_validate(tool, source, record.scope)
            except InvalidArguments as exc:
                raise Unprocessable(str(exc)) from None
        now = _now()
        async with self.db.write() as tx:
            claimed = await tx.approvals.claim(
                owner,
                approval_id,
                status="approved" if decision == "approve" else "rejected",
                decided_by=owner,
                now=now,
                reason=reason,
                args=final_args if decision == "approve" else None,
            )
        if not claimed:
            latest = await self.get(caller, approval_id)
            if replay and latest.status in DECIDED:
                return await self._replayed(caller, latest, decision, args, reason)
            self._refuse_if_closed(latest, now=now)
            raise Conflict("This approval was already decided.", code="already_decided")

        outcome: ToolOutcome | BackgroundStarted
        site = stored_site(caller, record)
        background = self.runtime.background if tool.long_running else None
        if model is not None and background is not None:
            # Like an auto call: a background job, whose result continues the conversation
            # in a new run; launched once the part says it is loading.
            outcome = await background.start(tool, model, site, launch=False)
        elif model is not None:
            outcome = await self.runtime.execute(tool, model, site)
        else:
            outcome = error_outcome(REJECTED, args=visible_args(tool, record.args), reason=reason)
        part, ready = await self._finish(caller, record, decision, outcome, final_args, via)
        if isinstance(outcome, BackgroundStarted) and background and model is not None:
            background.launch(outcome.job_id, tool, model, site)
        return DecisionResult(await self.get(caller, approval_id), part, ready)

    async def check_claim(
        self,
        caller: Caller,
        approval_id: str,
        *,
        tool_call_id: str,
        tool_name: str,
        args: dict[str, Any] | None,
    ) -> ApprovalRecord:
        """A stateless turn's claim that a human decided this approval, checked before
        anything is decided: this caller's (else 404), asked in a stateless turn for this
        very call (else 404: it is not that call's approval), still pending and unexpired
        (409), and the call (name, and arguments with the scope re-pinned) in the client's
        history hashes to the digest the approval was asked with (409
        `approval_args_mismatch`)."""
        record = await self.get(caller, approval_id)
        if record.conversation_id is not None or record.tool_call_id != tool_call_id:
            raise approval_not_found()
        self._refuse_if_closed(record)
        if not self._same_call(record, tool_name, args):
            raise Conflict(
                "The tool call's arguments changed since approval was asked.",
                code="approval_args_mismatch",
            )
        return record

    async def decided_part(
        self, caller: Caller, approval_id: str, tool_call_id: str
    ) -> ToolPart | None:
        """The call's part as its stateless approval's decision left it; None when the
        approval is unknown, another caller's, another call's or still pending."""
        try:
            record = await self.get(caller, approval_id)
        except NotFound:
            return None
        tool = self.runtime.catalog.registry.get(record.tool_name)
        if (
            tool is None
            or record.conversation_id is not None
            or record.tool_call_id != tool_call_id
            or record.status == "pending"
        ):
            return None
        outcome = approval_answer(tool, record)
        assert isinstance(outcome, ToolOutcome)  # decided: never asks again
        waiting = tool_part(
            tool_call_id=tool_call_id,
            tool_name=record.tool_name,
            status="waitingConfirmation",
            approval_id=record.id,
        )
        return updated_part(waiting, outcome)

    def _same_call(
        self, record: ApprovalRecord, tool_name: str, args: dict[str, Any] | None
    ) -> bool:
        """Whether a call (name and arguments, scope re-pinned) is the one asked about."""
        tool = self.runtime.catalog.registry.get(record.tool_name)
        if tool is None or tool_name != record.tool_name:
            return False
        try:
            _, pinned = pin_and_validate(tool, args or {}, record.scope)
        except InvalidArguments:
            return False
        return args_hash(pinned) == record.args_hash

    async def _replayed(
        self,
        caller: Caller,
        record: ApprovalRecord,
        decision: Decision,
        args: dict[str, Any] | None,
        reason: str | None,
    ) -> DecisionResult:
        """Where the call of an approval decided as asked stands; 409 otherwise. A call
        whose outcome was lost is closed first, whatever this request decides."""
        tool = self.runtime.catalog.registry.get(record.tool_name)
        found = None
        if record.conversation_id is not None:
            async with self.db.read() as tx:
                found = await standing(tx.messages, record)
        closed = None
        if found is not None and found.part.data.status == "waitingConfirmation":
            closed = await self._close_lost(caller, record, tool)
        if not same_decision(tool, record, decision, args, reason):
            self._refuse_if_closed(record)  # decided otherwise: 409 already_decided
        if closed is not None:
            return closed
        if record.conversation_id is None:  # a stateless turn's: nothing stored to resume
            part = await self.decided_part(caller, record.id, record.tool_call_id)
            return DecisionResult(record, part, ready_to_resume=False, replayed=True)
        if found is None:
            return DecisionResult(record, None, ready_to_resume=False, replayed=True)
        return DecisionResult(
            record,
            found.part,
            found.ready_to_resume,
            found.continued_by,
            replayed=True,
            moved_on=found.moved_on,
        )

    async def _close_lost(
        self, caller: Caller, record: ApprovalRecord, tool: ServerTool[Any] | None
    ) -> DecisionResult | None:
        """The call of a decision whose outcome was lost, closed (see decision_replay);
        None while the attempt that decided it may still be running, or once it stored
        an outcome after all."""
        outcome = lost_outcome(tool, record, timeout=self._timeout(tool), now=_now())
        if outcome is None:
            return None
        decided: Decision = "approve" if record.status == "approved" else "reject"
        try:
            part, ready = await self._finish(
                caller, record, decided, outcome, record.args, "api", unless_recorded=True
            )
        except _Recorded:
            return None
        latest = await self.get(caller, record.id)
        return DecisionResult(latest, part, ready, replayed=True)

    async def settle_lost(self, caller: Caller, record: ApprovalRecord) -> DecisionResult | None:
        """Close the call of a decided approval whose outcome an outage lost, for a path
        that decides without `replay` (an `mcp_approval_response`, a `resume` entry); the
        closed call when it did, and the conversation may go on."""
        if record.status not in DECIDED or record.conversation_id is None:
            return None
        async with self.db.read() as tx:
            found = await standing(tx.messages, record)
        if found is None or found.part.data.status != "waitingConfirmation":
            return None
        tool = self.runtime.catalog.registry.get(record.tool_name)
        return await self._close_lost(caller, record, tool)

    async def settle_lost_in(self, caller: Caller, conversation_id: str) -> bool:
        """Close the calls of the conversation whose outcome an outage lost, though no
        decision is sent again (the conversation is read or followed, or a decision is
        typed): the same error a decision sent again writes, once past the tool's time
        limit and `LOST_AFTER`. True when one was closed. Usually one query, no rows."""
        async with self.db.read() as tx:
            unfinished = await tx.approvals.unfinished(caller.user_id, conversation_id)
        closed = False
        for record in unfinished:
            tool = self.runtime.catalog.registry.get(record.tool_name)
            if lost_outcome(tool, record, timeout=self._timeout(tool), now=_now()) is not None:
                closed = await self.settle_lost(caller, record) is not None or closed
        return closed

    async def settle_due(self, owner_id: str, conversation_id: str) -> None:
        """What time alone settles in a conversation, for its followers' polls: approvals
        that expired waiting, and calls whose outcome an outage lost."""
        await expire_due(self.db, owner_id, conversation_id)
        await self.settle_lost_in(Caller(user_id=owner_id), conversation_id)

    def _timeout(self, tool: ServerTool[Any] | None) -> float:
        return self.runtime.timeout_for(tool) if tool else self.runtime.default_timeout

    def ensure_open(self, record: ApprovalRecord) -> None:
        """409 `approval_expired` / `already_decided` unless the approval can be decided."""
        self._refuse_if_closed(record)

    def _refuse_if_closed(self, record: ApprovalRecord, *, now: datetime | None = None) -> None:
        if record.status == "pending" and record.expires_at <= (now or _now()):
            raise Conflict(
                "This approval has expired; ask the assistant again.",
                code="approval_expired",
                expired_at=record.expires_at.isoformat(),
            )
        if record.status != "pending":
            raise Conflict(
                "This approval was already decided.",
                code="already_decided",
                decision=record.status,
            )

    async def _check_part(self, record: ApprovalRecord) -> None:
        """The stored tool part must still be this call, waiting, with the same args."""
        if record.conversation_id is None:
            return
        async with self.db.read() as tx:
            found = await find_part(tx.messages, record)
        if found is None:
            raise Conflict(
                "The tool call is not stored yet; retry in a moment.",
                code="approval_not_ready",
                retryable=True,
            )
        _, part = found
        if part.data.status != "waitingConfirmation":
            async with self.db.write() as tx:
                await tx.approvals.cancel_pending(
                    record.owner_id, approval_id=record.id, now=_now()
                )
            raise Conflict(
                "This tool call is no longer waiting (its run was cancelled or it was "
                "answered otherwise).",
                code="already_decided",
                decision="cancelled",
            )
        if not self._same_call(record, part.data.toolName, part.data.args):
            raise Conflict(
                "The tool call's arguments changed since approval was asked.",
                code="approval_args_mismatch",
            )

    async def _finish(
        self,
        caller: Caller,
        record: ApprovalRecord,
        decision: Decision,
        outcome: ToolOutcome | BackgroundStarted,
        final_args: dict[str, Any],
        via: str,
        *,
        unless_recorded: bool = False,
    ) -> tuple[ToolPart | None, bool]:
        """Store the decided call's outcome, in its part and the audit; with
        `unless_recorded`, `_Recorded` (nothing written) when an outcome is stored already."""
        owner = caller.user_id
        part: ToolPart | None = None
        ready = False
        written: tuple[ToolPart, bool, str] | None = None
        status, result = recorded(outcome)
        async with self.db.write() as tx:
            kept = await tx.approvals.record_outcome(
                owner,
                record.id,
                outcome_status=status,
                result=result,
                unless_recorded=unless_recorded,
            )
            if not kept and unless_recorded:
                raise _Recorded(record.id)
            if record.conversation_id is not None:
                # Take the conversation's write lock first, so two decisions on one message
                # queue up instead of overwriting each other's part.
                await tx.conversations.lock(owner, record.conversation_id)
                written = await rewrite_part(tx, record, lambda p: updated_part(p, outcome))
            change: PartChange | None = None
            if written is not None:
                part, ready, message_id = written
                cause: PartUpdateCause = (
                    "approval_approved" if decision == "approve" else "approval_rejected"
                )
                change = PartChange(message_id, part, cause)
            details: dict[str, Any] = {
                "model": record.model_id,
                "args": final_args,
                "edited": final_args != record.args,
                "via": via,
                "outcome": status,
                "reason": result.get("error") if status == "error" else None,
            }
            await settle_card(
                tx,
                record,
                change,
                key=f"approval:{record.id}",
                audit=CardAudit(owner, f"approval.{decision}", "approval", record.id, details),
            )
        if part is None:  # no stored message (a stateless run): the part as it now stands
            part = updated_part(
                tool_part(
                    tool_call_id=record.tool_call_id,
                    tool_name=record.tool_name,
                    status="waitingConfirmation",
                    approval_id=record.id,
                ),
                outcome,
            )
        return part, ready
