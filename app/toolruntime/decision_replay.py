"""A decision sent again: the answer to a client that retries `POST /api/approvals/{id}`.

The decision commits before the run continues, so a request can fail (a database outage
answers 503) after the approval is decided. A second decision is 409 `already_decided`, but
the client's retry must still find its conversation going on:

    the approval is already ...    the retry says ...    answer (409 already_decided)
    approved / rejected            the same decision     naming the decision and the run that
                                                         continues the conversation (started
                                                         now if none did); the tool never reruns
    approved / rejected            another decision      naming the decision taken
    cancelled, expired             anything              409 as before

The same decision is the same `decision`, `reason` and, for an approval, the same
arguments (as asked when the retry sends none, else the edited ones, scope re-pinned).

The decision is committed before the tool runs and its outcome is stored after, so an
outage or a crash in between leaves the call decided, its outcome unknown and its part
waiting for ever. The same decision sent again once the first attempt cannot still be
running (past the call's timeout and `LOST_AFTER`, as for a lost answer) closes the call
with an error saying so (`lost_outcome`; a rejection with the rejection), and the
conversation goes on.
Another decision sent then closes the call as well (the card stops waiting) and is refused
as above. With no decision sent at all, reading or following the conversation, or a
typed `yes`/`no`, closes it the same way (`ApprovalService.settle_lost_in`). The tool is
never run again: it may have run.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, Literal

from app.domain.tooling import ToolOutcome
from app.store.repos.approvals import ApprovalRecord
from app.toolruntime.outcomes import LOST_AFTER, REJECTED, error_outcome
from app.tools.base import ServerTool, visible_args
from app.tools.pinning import InvalidArguments, args_hash, pin_and_validate

Decision = Literal["approve", "reject"]
DECIDED = frozenset({"approved", "rejected"})  # what a human decided (not cancelled, expired)
LOST = (
    "The service was interrupted after this call was approved and before its outcome was "
    "stored, so it may or may not have run; check before asking for it again."
)


def same_decision(
    tool: ServerTool[Any] | None,
    record: ApprovalRecord,
    decision: Decision,
    args: dict[str, Any] | None,
    reason: str | None,
) -> bool:
    """Whether `record` was decided exactly as this request asks."""
    if record.status != ("approved" if decision == "approve" else "rejected"):
        return False
    if record.reason != reason:
        return False
    if decision == "reject":
        return True
    if args is None:  # approved as asked: the stored arguments still hash to the asked ones
        return args_hash(record.args) == record.args_hash
    if tool is None:
        return False
    try:
        _, pinned = pin_and_validate(tool, args, record.scope)
    except InvalidArguments:
        return False
    return args_hash(pinned) == args_hash(record.args)


def lost_outcome(
    tool: ServerTool[Any] | None,
    record: ApprovalRecord,
    *,
    timeout: float,
    now: datetime,
) -> ToolOutcome | None:
    """What closes the call of an approval decided and never finished (its outcome not
    stored); None while the attempt that decided it may still be running it."""
    if record.outcome_status is not None or record.decided_at is None:
        return None
    if now < record.decided_at + timedelta(seconds=timeout) + LOST_AFTER:
        return None
    shown = visible_args(tool, record.args) if tool is not None else None
    if record.status == "rejected":
        return error_outcome(REJECTED, args=shown, reason=record.reason)
    return error_outcome(LOST, args=shown)
