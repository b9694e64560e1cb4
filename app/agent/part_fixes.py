"""What the loop fixes in the parts a model call produced before they are kept."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from app.domain.parts import Elicitation, Part, ToolPart, cancel_unfinished
from app.domain.text import valid_json
from app.domain.tooling import ApprovalNeeded, InputNeeded

# `Agent._replace`'s keyword names -> the ToolData fields they change.
DATA_FIELDS = {
    "status": "status",
    "result": "result",
    "args": "args",
    "body_content": "bodyContent",
    "mutates": "mutates",
    "approval_id": "approvalId",
    "elicitation": "elicitation",
    "job_id": "backgroundJobId",
}
MAX_NAMES_LISTED = 40


def valid_args(part: Part) -> Part:
    """Arguments parsed from JSON text may hold escapes of what is not valid text."""
    if not isinstance(part, ToolPart) or not part.data.args:
        return part
    args = valid_json(part.data.args)
    if args == part.data.args:
        return part
    return ToolPart(id=part.id, data=part.data.model_copy(update={"args": args}))


def close_dangling(part: Part, *, force: bool = False) -> Part:
    """A tool call without a result, closed as cancelled (a run cut short)."""
    return cancel_unfinished(
        part, "cancelled before it finished", body_content="Cancelled.", force=force
    )


def unknown_tool(name: str, names: set[str]) -> str:
    """The error the model reads back: what it called, and what it may call instead."""
    ordered = sorted(names)
    listed = ", ".join(f"`{n}`" for n in ordered[:MAX_NAMES_LISTED])
    extra = len(ordered) - MAX_NAMES_LISTED
    more = f" and {extra} more" if extra > 0 else ""
    return f"There is no tool named `{name}`; the tools are {listed or 'none'}{more}."


def none_usable(
    calls: list[ToolPart], client_names: set[str], knows: Callable[[str], bool]
) -> bool:
    """True when no call of an answer can run: each is unreadable or unknown."""
    return all(
        p.data.status == "error"
        or (p.data.toolName not in client_names and not knows(p.data.toolName))
        for p in calls
    )


def waiting_changes(
    outcome: ApprovalNeeded | InputNeeded, part: ToolPart
) -> tuple[dict[str, Any], dict[str, Any]]:
    """For a server call that waits for a person: the `Agent._replace` changes of its part,
    and the fields of the `confirm_required` event that says so."""
    args = outcome.args if outcome.args is not None else part.data.args
    changes: dict[str, Any]
    if isinstance(outcome, ApprovalNeeded):
        changes = {
            "status": "waitingConfirmation",
            "args": args,
            "body_content": outcome.summary,
            "approval_id": outcome.approval_id,
        }
        announced = {
            "kind": "approval",
            "approval_id": outcome.approval_id,
            "summary": outcome.summary,
            "expires_at": outcome.expires_at,
        }
        return changes, announced
    asked = Elicitation(
        id=outcome.elicitation_id, message=outcome.message, requestedSchema=outcome.requested_schema
    )
    changes = {
        "status": "waitingSubmission",
        "args": args,
        "body_content": outcome.message,
        "elicitation": asked,
    }
    return changes, {"kind": "input", "summary": outcome.message}


def waits_for_human(part: Part) -> bool:
    """A server call waiting for a person (an approval, or an answer to the tool's
    question), not for the browser's tool result."""
    if not isinstance(part, ToolPart):
        return False
    data = part.data
    return bool(data.approvalId and data.status == "waitingConfirmation") or bool(
        data.elicitation and data.status == "waitingSubmission"
    )
