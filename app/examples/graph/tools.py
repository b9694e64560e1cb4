"""The example graph's tools: find, read, add, connect, set a property, delete.

Each conversation scope has its own graph: the `scope_key` is derived from the pinned
`user_id` and the workspace (when one is bound) or else the conversation. The scope
arguments are declared here so the runtime pins them; the model never sees them, and a
value it sends anyway is overwritten before the handler runs.

Reads (`find_nodes`, `get_graph`) run at once, on live data even in propose mode.
`add_node` and `connect` mutate (proposed in a propose-mode conversation; `add_node` then
hands out a provisional id that `connect` accepts). `set_property` always proposes, and
`delete_node` asks a human first.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from pydantic import Field

from app.examples.graph.repo import EdgeRecord, GraphRepo, NodeRecord
from app.tools.base import PROVISIONAL_PREFIX, ServerTool, ToolArgs, ToolContext, ToolFailure
from app.tools.registry import ToolRegistry

MAX_ROWS = 200


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


def _repo(args: GraphScope, ctx: ToolContext) -> GraphRepo:
    key = scope_key(args.user_id, args.workspace_id, args.conversation_id, args.session_id)
    return GraphRepo.for_call(ctx.tx, key)


def _node_out(node: NodeRecord) -> dict[str, Any]:
    return {"id": node.id, "label": node.label, "name": node.name, "properties": node.properties}


def _edge_out(edge: EdgeRecord) -> dict[str, Any]:
    return {
        "id": edge.id,
        "source_id": edge.source_id,
        "target_id": edge.target_id,
        "relation": edge.relation,
    }


async def _resolve(repo: GraphRepo, ref: str, ctx: ToolContext) -> NodeRecord:
    """A node of this scope by id, provisional id or (case-insensitive) exact name."""
    ref = ref.strip()
    if ref.startswith(PROVISIONAL_PREFIX):
        real = ctx.provisional.get(ref)
        if real is None:
            raise ToolFailure(
                f"{ref} is the provisional id of a proposal that has not been applied; "
                "it can only be used by proposals approved in the same batch."
            )
        ref = real
    node = await repo.node(ref)
    if node is not None:
        return node
    named = await repo.nodes_named(ref)
    if not named:
        raise ToolFailure(f"No node with the id or name {ref!r} exists in this graph.")
    if len(named) > 1:
        ids = ", ".join(n.id for n in named)
        raise ToolFailure(f"The name {ref!r} is ambiguous ({ids}); use an id.")
    return named[0]


# -- reads --------------------------------------------------------------------------------


class FindNodesArgs(GraphScope):
    query: str | None = Field(default=None, description="Text to look for in names and labels.")
    label: str | None = Field(default=None, description="Only nodes with this label.")
    limit: int = Field(default=50, ge=1, le=MAX_ROWS, description="At most this many nodes.")


async def find_nodes(args: FindNodesArgs, ctx: ToolContext) -> dict[str, Any]:
    nodes = await _repo(args, ctx).find(query=args.query, label=args.label, limit=args.limit)
    return {"nodes": [_node_out(n) for n in nodes], "count": len(nodes)}


class GetGraphArgs(GraphScope):
    pass


async def get_graph(args: GetGraphArgs, ctx: ToolContext) -> dict[str, Any]:
    repo = _repo(args, ctx)
    nodes = await repo.all_nodes(MAX_ROWS)
    edges = await repo.edges(MAX_ROWS)
    return {"nodes": [_node_out(n) for n in nodes], "edges": [_edge_out(e) for e in edges]}


# -- writes -------------------------------------------------------------------------------


class AddNodeArgs(GraphScope):
    label: str = Field(min_length=1, max_length=128, description="Kind of node, e.g. Person.")
    name: str = Field(min_length=1, max_length=255, description="The node's name.")
    properties: dict[str, Any] = Field(
        default_factory=dict, description="Extra facts about the node."
    )


async def add_node(args: AddNodeArgs, ctx: ToolContext) -> dict[str, Any]:
    node = await _repo(args, ctx).add_node(args.label, args.name, args.properties)
    return _node_out(node)


class ConnectArgs(GraphScope):
    source: str = Field(min_length=1, description="Source node: id, provisional id or name.")
    target: str = Field(min_length=1, description="Target node: id, provisional id or name.")
    relation: str = Field(min_length=1, max_length=128, description="Relation type, e.g. designed.")


async def connect(args: ConnectArgs, ctx: ToolContext) -> dict[str, Any]:
    repo = _repo(args, ctx)
    source = await _resolve(repo, args.source, ctx)
    target = await _resolve(repo, args.target, ctx)
    edge = await repo.connect(source.id, target.id, args.relation)
    return {
        **_edge_out(edge),
        "source": {"id": source.id, "name": source.name},
        "target": {"id": target.id, "name": target.name},
    }


class SetPropertyArgs(GraphScope):
    node: str = Field(min_length=1, description="The node: id, provisional id or name.")
    key: str = Field(min_length=1, max_length=128, description="Property name.")
    value: str | int | float | bool | None = Field(description="Property value.")


async def set_property(args: SetPropertyArgs, ctx: ToolContext) -> dict[str, Any]:
    repo = _repo(args, ctx)
    node = await _resolve(repo, args.node, ctx)
    updated = await repo.set_property(node.id, args.key, args.value)
    if updated is None:  # deleted between resolve and update
        raise ToolFailure(f"The node {node.id} no longer exists.")
    return _node_out(updated)


class DeleteNodeArgs(GraphScope):
    id: str = Field(min_length=1, description="The node to delete: id or exact name.")


async def delete_node(args: DeleteNodeArgs, ctx: ToolContext) -> dict[str, Any]:
    repo = _repo(args, ctx)
    node = await _resolve(repo, args.id, ctx)
    removed = await repo.delete_node(node.id)
    return {"deleted": node.id, "name": node.name, "edges_removed": removed}


def tools() -> list[ServerTool[Any]]:
    return [
        ServerTool(
            name="find_nodes",
            description="Search the knowledge graph for nodes by text and/or label.",
            args_model=FindNodesArgs,
            handler=find_nodes,
        ),
        ServerTool(
            name="get_graph",
            description="Return the whole knowledge graph: nodes and edges.",
            args_model=GetGraphArgs,
            handler=get_graph,
        ),
        ServerTool(
            name="add_node",
            description=(
                "Add a node to the knowledge graph. Returns its id (or, when the change is "
                "proposed, a provisional id that connect accepts)."
            ),
            args_model=AddNodeArgs,
            handler=add_node,
            mutates=True,
            creates=True,
            summarize=lambda a: f"Add {a.label} node {a.name!r}",
        ),
        ServerTool(
            name="connect",
            description=(
                "Connect two nodes with a typed relation. Nodes may be named by id, "
                "provisional id or exact name."
            ),
            args_model=ConnectArgs,
            handler=connect,
            mutates=True,
            summarize=lambda a: f"Connect {a.source!r} -[{a.relation}]-> {a.target!r}",
        ),
        ServerTool(
            name="set_property",
            description=(
                "Propose setting a property on a node; a human applies it with the "
                "conversation's proposal queue."
            ),
            args_model=SetPropertyArgs,
            handler=set_property,
            policy="propose",
            mutates=True,
            summarize=lambda a: f"Set {a.key}={a.value!r} on {a.node!r}",
        ),
        ServerTool(
            name="delete_node",
            description="Delete a node and all its edges. A human must approve it first.",
            args_model=DeleteNodeArgs,
            handler=delete_node,
            policy="confirm",
            mutates=True,
            summarize=lambda a: f"Delete the node {a.id!r} and all its edges",
        ),
    ]


def register(registry: ToolRegistry) -> None:
    for tool in tools():
        registry.register(tool)
