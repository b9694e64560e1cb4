"""What an applied proposal leaves so its batch can be undone (see `app.toolruntime.undo`).

While a batch is applied, each proposal whose tool has an `Inverse` captures what it
needs before and after its handler; once the whole batch has run, `seal` records the
state the batch left every touched entity in. The batch row keeps the result with each
change, under `undo`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from app.tools.base import ServerTool, ToolContext, Undoable


@dataclass(frozen=True)
class PendingUndo:
    """How one just-applied proposal is taken back, before the batch's end state is known."""

    tool: ServerTool[Any]
    args: BaseModel
    ctx: ToolContext
    undoable: Undoable


async def capture_before(tool: ServerTool[Any], args: BaseModel, ctx: ToolContext) -> Any:
    """What the tool keeps from before its handler runs (None without a `before` hook)."""
    if tool.inverse is None or tool.inverse.before is None:
        return None
    return await tool.inverse.before(args, ctx)


async def capture_after(
    tool: ServerTool[Any], args: BaseModel, result: Any, before: Any, ctx: ToolContext
) -> PendingUndo | None:
    if tool.inverse is None:
        return None
    undoable = await tool.inverse.after(args, result, before, ctx)
    return PendingUndo(tool=tool, args=args, ctx=ctx, undoable=undoable)


async def seal(pending: Sequence[PendingUndo | None]) -> list[dict[str, Any] | None]:
    """Per applied proposal, what undo needs: the state the whole batch left each touched
    entity in, and the tool's revert data (None: the tool cannot be undone)."""
    sealed: list[dict[str, Any] | None] = []
    for item in pending:
        if item is None:
            sealed.append(None)
            continue
        assert item.tool.inverse is not None
        state = await item.tool.inverse.state(item.args, item.undoable.touched, item.ctx)
        sealed.append({"state": dict(state), "data": item.undoable.data})
    return sealed
