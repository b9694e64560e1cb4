"""The propose-then-approve queue of a conversation.

Approving applies the queue (or the chosen ids) in call order inside ONE transaction:

    claim every proposal (conditional UPDATE: a concurrent approver finds nothing to claim)
    for each, in order:
        replace provisional ids handed out earlier in the batch with the real ids
        pin + validate again (the tool may have changed), run the handler
        a failure -> roll everything back, keep the queue, answer 409 with the proposal
                     and the reason (a stale proposal fails here, e.g. its node was deleted)
    one audit record: who proposed (conversation, runs, models), who approved, what changed
    the batch row keeps, per change, how to undo it (`app.toolruntime.undoable`)

Handlers run in the batch's own unit of work, so a later proposal sees what earlier ones
wrote (a `connect` finds the node an `add_node` of the same batch created).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from app.domain.errors import Conflict
from app.domain.identity import Caller
from app.store.database import Tx
from app.store.repos.proposals import ProposalRecord, new_batch_id
from app.toolruntime.outcomes import jsonable, stored_site
from app.toolruntime.runtime import ServerToolRuntime
from app.toolruntime.settled_parts import settle_proposal_parts
from app.toolruntime.undoable import PendingUndo, capture_after, capture_before, seal
from app.tools.base import PROVISIONAL_PREFIX, ToolContext, ToolFailure, visible_args
from app.tools.pinning import InvalidArguments, pin_and_validate

_PROVISIONAL = re.compile(rf"^{PROVISIONAL_PREFIX}[0-9a-f]{{32}}$")


class ProposalFailed(Conflict):
    code = "proposal_failed"


@dataclass(frozen=True)
class AppliedChange:
    proposal_id: str
    tool_name: str
    args: dict[str, Any]
    result: Any
    provisional_id: str | None
    real_id: str | None
    undo: PendingUndo | None = field(default=None, repr=False, compare=False)


@dataclass(frozen=True)
class BatchResult:
    batch_id: str | None
    audit_id: str | None
    applied: list[AppliedChange]


def substitute(value: Any, provisional: Mapping[str, str]) -> Any:
    """`value` with every string that is a known provisional id replaced by its real id."""
    if isinstance(value, str):
        return provisional.get(value, value)
    if isinstance(value, list):
        return [substitute(v, provisional) for v in value]
    if isinstance(value, dict):
        return {k: substitute(v, provisional) for k, v in value.items()}
    return value


def _unresolved(value: Any) -> str | None:
    if isinstance(value, str):
        return value if _PROVISIONAL.match(value) else None
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else []
    for item in items:
        found = _unresolved(item)
        if found is not None:
            return found
    return None


def _now() -> datetime:
    return datetime.now(UTC)


class ProposalService:
    """Built once per service over the tool runtime (its catalogue, timeouts, database)."""

    def __init__(self, runtime: ServerToolRuntime) -> None:
        self.runtime = runtime
        self.db = runtime.db

    async def queue(self, caller: Caller, conversation_id: str) -> list[ProposalRecord]:
        async with self.db.read() as tx:
            await tx.conversations.get(caller.user_id, conversation_id)
            return await tx.proposals.pending(caller.user_id, conversation_id)

    async def reject(
        self, caller: Caller, conversation_id: str, ids: Sequence[str] | None = None
    ) -> list[str]:
        """Drop all pending proposals, or the given ones; returns the ids dropped."""
        owner = caller.user_id
        async with self.db.write() as tx:
            await tx.conversations.get(owner, conversation_id)
            dropped = await tx.proposals.pending(owner, conversation_id, ids)
            chosen = [p.id for p in dropped]
            moved = await tx.proposals.mark(owner, chosen, status="rejected", now=_now())
            if moved != len(chosen):  # a concurrent approve or reject settled some first
                raise Conflict(
                    "The proposal queue changed while it was being rejected; reload it.",
                    code="proposals_changed",
                )
            settled = {p.tool_call_id: (p, None) for p in dropped}
            await settle_proposal_parts(tx, owner, conversation_id, settled, "proposal_rejected")
            if chosen:
                await tx.audit(
                    actor_id=owner,
                    action="proposals.reject",
                    target_type="conversation",
                    target_id=conversation_id,
                    details={"proposal_ids": chosen},
                )
        return chosen

    async def approve(
        self, caller: Caller, conversation_id: str, ids: Sequence[str] | None = None
    ) -> BatchResult:
        owner = caller.user_id
        async with self.db.write() as tx:
            await tx.conversations.get(owner, conversation_id)
            queue = await tx.proposals.pending(owner, conversation_id, ids)
            if not queue:
                return BatchResult(batch_id=None, audit_id=None, applied=[])
            claimed = await tx.proposals.mark(
                owner, [p.id for p in queue], status="applied", now=_now()
            )
            if claimed != len(queue):
                raise Conflict(
                    "The proposal queue changed while it was being approved; reload it.",
                    code="proposals_changed",
                )
            provisional: dict[str, str] = {}
            applied = [await self._apply(caller, tx, p, provisional) for p in queue]
            batch_id = new_batch_id()
            changes = [
                {
                    "proposal_id": c.proposal_id,
                    "tool": c.tool_name,
                    "args": c.args,
                    "result": c.result,
                    "provisional_id": c.provisional_id,
                    "real_id": c.real_id,
                }
                for c in applied
            ]
            sealed = await seal([c.undo for c in applied])
            audit_id = await tx.audit(
                actor_id=owner,
                action="proposals.apply",
                target_type="conversation",
                target_id=conversation_id,
                details={
                    "batch_id": batch_id,
                    "approved_by": owner,
                    "proposed_by": {
                        "conversation_id": conversation_id,
                        "models": sorted({p.model_id for p in queue}),
                        "runs": sorted({p.run_id for p in queue}),
                    },
                    "changes": changes,
                },
            )
            await tx.proposals.add_batch(
                batch_id=batch_id,
                owner_id=owner,
                conversation_id=conversation_id,
                approved_by=owner,
                audit_id=audit_id,
                changes=[{**c, "undo": u} for c, u in zip(changes, sealed, strict=True)],
                proposal_ids=[p.id for p in queue],
            )
            settled = {p.tool_call_id: (p, c.result) for p, c in zip(queue, applied, strict=True)}
            await settle_proposal_parts(tx, owner, conversation_id, settled, "proposal_applied")
        return BatchResult(batch_id=batch_id, audit_id=audit_id, applied=applied)

    async def _apply(
        self,
        caller: Caller,
        tx: Tx,
        proposal: ProposalRecord,
        provisional: dict[str, str],
    ) -> AppliedChange:
        def fail(reason: str) -> ProposalFailed:
            return ProposalFailed(
                f"Proposal {proposal.id} ({proposal.summary}) could not be applied: {reason} "
                "Nothing was applied; the queue is kept.",
                proposal_id=proposal.id,
                tool=proposal.tool_name,
                reason=reason,
            )

        tool = self.runtime.catalog.permitted(proposal.tool_name, caller, proposal.model_id)
        if tool is None:
            raise fail(f"the tool `{proposal.tool_name}` is no longer available.")
        site = stored_site(caller, proposal)
        args = substitute(proposal.args, provisional)
        dangling = _unresolved(visible_args(tool, args))
        if dangling is not None:
            raise fail(f"it refers to {dangling}, which no proposal of this batch created.")
        try:
            model, pinned = pin_and_validate(tool, args, site.scope)
        except InvalidArguments as exc:
            raise fail(str(exc)) from None
        try:  # the approver's identity: the person applying the batch
            identity = self.runtime.identity_for(tool, caller)
        except ToolFailure as exc:
            raise fail(str(exc)) from None
        ctx = ToolContext(site=site, tx=tx, provisional=provisional, identity=identity)
        timeout = self.runtime.timeout_for(tool)
        try:
            async with asyncio.timeout(timeout):
                before = await capture_before(tool, model, ctx)
                result = jsonable(await tool.handler(model, ctx))
                undo = await capture_after(tool, model, result, before, ctx)
        except ToolFailure as exc:
            raise fail(str(exc)) from None
        except TimeoutError:
            raise fail(f"it timed out after {timeout:g}s.") from None
        except Exception as exc:
            raise fail(f"the tool failed unexpectedly ({type(exc).__name__}).") from exc
        real_id = None
        if proposal.provisional_id is not None and isinstance(result, dict):
            real = result.get("id")
            if isinstance(real, str):
                real_id = real
                provisional[proposal.provisional_id] = real
        await tx.proposals.set_result(proposal.id, result)
        return AppliedChange(
            proposal_id=proposal.id,
            tool_name=proposal.tool_name,
            args=visible_args(tool, pinned),
            result=result,
            provisional_id=proposal.provisional_id,
            real_id=real_id,
            undo=undo,
        )
