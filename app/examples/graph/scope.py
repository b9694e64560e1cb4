"""Whose graph a call reaches: the scope arguments every graph tool declares.

The runtime pins them (the model never sees them; a value it sends anyway is overwritten
before the handler runs), and `scope_key` turns them into the graph the scope owns.
"""

from __future__ import annotations

import hashlib
import json

from pydantic import Field

from app.examples.graph.repo import GraphRepo
from app.tools.base import ToolArgs, ToolContext, ToolFailure


class GraphScope(ToolArgs):
    """Scope arguments: pinned by the runtime, hidden from the model."""

    user_id: str | None = Field(default=None, description="Pinned: the caller.")
    workspace_id: str | None = Field(default=None, description="Pinned: the bound workspace.")
    conversation_id: str | None = Field(default=None, description="Pinned: the conversation.")
    session_id: str | None = Field(default=None, description="Pinned: the bound session.")


def scope_key(
    user_id: str | None,
    workspace_id: str | None = None,
    conversation_id: str | None = None,
    session_id: str | None = None,
) -> str:
    """The graph a scope owns: the user plus its workspace, else conversation, else session."""
    if not user_id:
        raise ToolFailure("This tool needs a signed-in user.")
    key: dict[str, str] = {"user": user_id}
    if workspace_id:
        key["workspace"] = workspace_id
    elif conversation_id:
        key["conversation"] = conversation_id
    elif session_id:
        key["session"] = session_id
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()


def repo_for(args: GraphScope, ctx: ToolContext) -> GraphRepo:
    key = scope_key(args.user_id, args.workspace_id, args.conversation_id, args.session_id)
    return GraphRepo.for_call(ctx.tx, key)
