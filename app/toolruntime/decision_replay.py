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
"""

from __future__ import annotations

from typing import Any, Literal

from app.store.repos.approvals import ApprovalRecord
from app.tools.base import ServerTool
from app.tools.pinning import InvalidArguments, args_hash, pin_and_validate

Decision = Literal["approve", "reject"]
DECIDED = frozenset({"approved", "rejected"})  # what a human decided (not cancelled, expired)


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
