"""Undo across a workspace: the last batch applied in any of the caller's conversations
bound to a workspace (created with `scope.workspace_id`), with the conversation route's
rules and answers (`app.api.undo_answers`). A front end showing a workspace (a board,
a project) can offer one "undo" whichever conversation changed it last."""

from __future__ import annotations

from typing import Annotated

from fastapi import Body, Path

from app.api.deps import CallerDep, UndoDep
from app.api.routing import api_router
from app.api.schemas.proposals import BatchList, UndoIn, UndoOut
from app.api.undo_answers import UNDO_RESPONSES, batch_list, undo_out
from app.store.repos.proposals import BatchScope

router = api_router(prefix="/api/workspaces", tags=["proposals"])

WorkspaceId = Annotated[
    str, Path(max_length=255, description="The workspace id conversations are bound to.")
]


@router.post(
    "/{workspace_id}/proposals/undo",
    response_model=UndoOut,
    summary="Undo the workspace's last applied batch in one transaction, if nothing it "
    "touched changed.",
    responses=UNDO_RESPONSES,
)
async def undo_workspace_batch(
    workspace_id: WorkspaceId,
    undo: UndoDep,
    caller: CallerDep,
    body: Annotated[UndoIn | None, Body(description="Which batch; the last when absent.")] = None,
) -> UndoOut:
    batch_id = body.batch_id if body is not None else None
    return undo_out(await undo.undo(caller, BatchScope("workspace", workspace_id), batch_id))


@router.get(
    "/{workspace_id}/proposals/batches",
    response_model=BatchList,
    summary="The batches applied in the workspace's conversations, newest first.",
)
async def list_workspace_batches(
    workspace_id: WorkspaceId, undo: UndoDep, caller: CallerDep
) -> BatchList:
    return batch_list(await undo.history(caller, BatchScope("workspace", workspace_id)))
