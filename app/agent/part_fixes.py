"""What the loop fixes in the parts a model call produced before they are kept."""

from __future__ import annotations

from collections.abc import Callable

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
