"""Undo of an applied proposal batch: one step, all or nothing, only if nothing changed.

The batch is the last one applied in a scope: a conversation, or a workspace (every
conversation bound to it; the newest batch among them, by whichever conversation applied
it). The rules are the same for both.

When a batch is applied, each proposal's tool records how to take it back (its
`Inverse`): what it touched and what `revert` needs. Once the whole batch has run, the
state of every touched entity is recorded with the batch (`seal`): that is "what the
batch left". Undo, in ONE transaction:

    find the scope's newest batch still applied (an explicit batch id must be it)
    only the approver or an admin may undo it
    claim it: its proposals applied -> undone (conditional UPDATE: a second undo finds
              nothing to claim and is a 409 `batch_already_undone`)
    every touched entity must still be as the batch left it (the tools lock the rows
              they read); else 409 `undo_conflict` naming the entity and the proposal
    revert each proposal in reverse order (a later proposal is taken back before the
              one it built on)
    one audit record, `proposals.undo`, naming the apply's audit record

Any failure rolls everything back: nothing is reverted and the batch stays applied.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel

from app.domain.errors import ChatBffError, Conflict, NotFound
from app.domain.identity import Caller
from app.store.database import Tx
from app.store.repos.proposals import BatchRecord, BatchScope, ProposalRecord
from app.toolruntime.outcomes import stored_site
from app.toolruntime.proposals import substitute
from app.toolruntime.runtime import ServerToolRuntime
from app.toolruntime.settled_parts import settle_proposal_parts
from app.tools.base import Inverse, ToolContext, ToolFailure
from app.tools.pinning import InvalidArguments, pin_and_validate


class UndoConflict(Conflict):
    code = "undo_conflict"


@dataclass(frozen=True)
class _Step:
    """One applied proposal, ready to be checked and reverted."""

    proposal: ProposalRecord
    inverse: Inverse[Any]
    args: BaseModel
    ctx: ToolContext
    state: dict[str, str | None]  # what the batch left each touched entity as
    data: dict[str, Any]


@dataclass(frozen=True)
class UndoneChange:
    proposal_id: str
    tool_name: str
    entities: list[str]


@dataclass(frozen=True)
class UndoResult:
    batch_id: str
    audit_id: str
    undone: list[UndoneChange]


def _scope(scope: BatchScope | str) -> BatchScope:
    return BatchScope("conversation", scope) if isinstance(scope, str) else scope


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class BatchView:
    batch: BatchRecord
    proposals: list[ProposalRecord]

    @property
    def status(self) -> str:
        """`undone` once undone, else `applied`."""
        return "undone" if any(p.status == "undone" for p in self.proposals) else "applied"


class BatchUndo:
    """Undoes a conversation's last applied batch; built over the tool runtime."""

    def __init__(self, runtime: ServerToolRuntime) -> None:
        self.runtime = runtime

    async def history(
        self, caller: Caller, scope: BatchScope | str, limit: int = 20
    ) -> list[BatchView]:
        """The scope's batches, newest first, each applied or undone (a bare string is a
        conversation id)."""
        scope = _scope(scope)
        async with self.runtime.db.read() as tx:
            if scope.kind == "conversation":
                await tx.conversations.get(caller.user_id, scope.id)
            elif not await tx.proposals.in_workspace(caller.user_id, scope.id):
                raise NotFound(
                    "None of your conversations is bound to this workspace.",
                    code="workspace_not_found",
                )
            batches = await tx.proposals.batches(caller.user_id, scope, limit=limit)
            return [BatchView(b, await tx.proposals.of_batch(b.id)) for b in batches]

    async def undo(
        self, caller: Caller, scope: BatchScope | str, batch_id: str | None = None
    ) -> UndoResult:
        """Undo the scope's last applied batch (a bare string is a conversation id)."""
        scope = _scope(scope)
        async with self.runtime.db.write() as tx:
            batch = await self._target(tx, caller, scope, batch_id)
            proposals = await tx.proposals.of_batch(batch.id)
            claimed = await tx.proposals.mark_batch(batch.id, status="undone", now=_now())
            if claimed != len(proposals):
                raise Conflict(
                    f"The batch {batch.id} was undone meanwhile.",
                    code="batch_already_undone",
                    batch_id=batch.id,
                )
            steps = await self._steps(tx, caller, batch, proposals)
            for step in steps:
                await _check(step)
            for step in reversed(steps):
                await _revert(step)
            settled = {p.tool_call_id: (p, None) for p in proposals}
            await settle_proposal_parts(
                tx, batch.owner_id, batch.conversation_id, settled, "proposal_undone"
            )
            undone = [
                UndoneChange(s.proposal.id, s.proposal.tool_name, sorted(s.state)) for s in steps
            ]
            audit_id = await tx.audit(
                actor_id=caller.user_id,
                action="proposals.undo",
                target_type="conversation",
                target_id=batch.conversation_id,
                details={
                    "batch_id": batch.id,
                    "apply_audit_id": batch.audit_id,
                    "approved_by": batch.approved_by,
                    "undone_by": caller.user_id,
                    "scope": {"kind": scope.kind, "id": scope.id},
                    "changes": [
                        {"proposal_id": c.proposal_id, "tool": c.tool_name, "entities": c.entities}
                        for c in undone
                    ],
                },
            )
        return UndoResult(batch_id=batch.id, audit_id=audit_id, undone=undone)

    async def _target(
        self, tx: Tx, caller: Caller, scope: BatchScope, batch_id: str | None
    ) -> BatchRecord:
        owner = None if caller.is_admin else caller.user_id
        if owner is not None and scope.kind == "conversation":
            await tx.conversations.get(owner, scope.id)
        last = await tx.proposals.last_applied_batch(scope, owner)
        if batch_id is not None and (last is None or last.id != batch_id):
            asked = await tx.proposals.batch(batch_id, owner, scope)
            if asked is None:
                raise NotFound("Batch not found.", code="batch_not_found", batch_id=batch_id)
            if any(p.status == "undone" for p in await tx.proposals.of_batch(batch_id)):
                raise Conflict(
                    f"The batch {batch_id} was already undone.",
                    code="batch_already_undone",
                    batch_id=batch_id,
                )
            raise Conflict(
                f"Only the last applied batch ({last.id if last else None}) can be undone.",
                code="not_last_batch",
                batch_id=batch_id,
            )
        if last is None:
            raise NotFound(
                f"This {scope.kind} has no applied batch to undo.", code="batch_not_found"
            )
        if last.approved_by != caller.user_id and not caller.is_admin:
            raise ChatBffError(
                "Only the person who approved the batch, or an admin, can undo it.",
                code="not_approver",
                status=403,
            )
        return last

    async def _steps(
        self, tx: Tx, caller: Caller, batch: BatchRecord, proposals: list[ProposalRecord]
    ) -> list[_Step]:
        """Each proposal with its tool's arguments as applied, and its undo record."""
        changes = {c["proposal_id"]: c for c in batch.changes}
        provisional = {
            c["provisional_id"]: c["real_id"]
            for c in batch.changes
            if c.get("provisional_id") and c.get("real_id")
        }
        steps = []
        for proposal in proposals:
            entry = changes.get(proposal.id, {}).get("undo")
            tool = self.runtime.catalog.permitted(proposal.tool_name, caller, proposal.model_id)
            if tool is None or tool.inverse is None or not isinstance(entry, dict):
                raise _not_undoable(proposal, "its tool does not say how to undo it.")
            site = stored_site(caller, proposal)
            try:
                args, _ = pin_and_validate(tool, substitute(proposal.args, provisional), site.scope)
            except InvalidArguments as exc:
                raise _not_undoable(proposal, str(exc)) from None
            ctx = ToolContext(site=site, tx=tx)
            steps.append(_Step(proposal, tool.inverse, args, ctx, entry["state"], entry["data"]))
        return steps


async def _check(step: _Step) -> None:
    now = await step.inverse.state(step.args, list(step.state), step.ctx)
    for entity, digest in step.state.items():
        if now.get(entity) != digest:
            proposal = step.proposal
            raise UndoConflict(
                f"{entity}, touched by proposal {proposal.id} ({proposal.summary}), has "
                "changed since the batch was applied. Nothing was undone.",
                entity=entity,
                proposal_id=proposal.id,
                tool=proposal.tool_name,
            )


async def _revert(step: _Step) -> None:
    try:
        await step.inverse.revert(step.args, step.data, step.ctx)
    except ToolFailure as exc:
        raise _not_undoable(step.proposal, str(exc)) from None


def _not_undoable(proposal: ProposalRecord, reason: str) -> UndoConflict:
    return UndoConflict(
        f"Proposal {proposal.id} ({proposal.summary}) cannot be undone: {reason} "
        "Nothing was undone.",
        code="not_undoable",
        proposal_id=proposal.id,
        tool=proposal.tool_name,
        reason=reason,
    )
