"""What the loop fixes in the parts a model call produced before they are kept."""

from __future__ import annotations

from app.domain.parts import Part, ToolPart, cancel_unfinished
from app.domain.text import valid_json

# `Agent._replace`'s keyword names -> the ToolData fields they change.
DATA_FIELDS = {
    "status": "status",
    "result": "result",
    "args": "args",
    "body_content": "bodyContent",
    "mutates": "mutates",
    "approval_id": "approvalId",
}


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
