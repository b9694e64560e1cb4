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

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import Field

from app.examples.graph.repo import EdgeRecord, GraphRepo, NodeRecord
from app.examples.graph.scope import GraphScope, repo_for
from app.examples.graph.scope import scope_key as scope_key
from app.tools.base import (
    PROVISIONAL_PREFIX,
    Inverse,
    ServerTool,
    ToolContext,
    ToolFailure,
    Undoable,
)
from app.tools.registry import ToolRegistry

MAX_ROWS = 200


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
    nodes = await repo_for(args, ctx).find(query=args.query, label=args.label, limit=args.limit)
    return {"nodes": [_node_out(n) for n in nodes], "count": len(nodes)}


class GetGraphArgs(GraphScope):
    pass


async def get_graph(args: GetGraphArgs, ctx: ToolContext) -> dict[str, Any]:
    repo = repo_for(args, ctx)
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
    node = await repo_for(args, ctx).add_node(args.label, args.name, args.properties)
    return _node_out(node)


class ConnectArgs(GraphScope):
    source: str = Field(min_length=1, description="Source node: id, provisional id or name.")
    target: str = Field(min_length=1, description="Target node: id, provisional id or name.")
    relation: str = Field(min_length=1, max_length=128, description="Relation type, e.g. designed.")


async def connect(args: ConnectArgs, ctx: ToolContext) -> dict[str, Any]:
    repo = repo_for(args, ctx)
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
    repo = repo_for(args, ctx)
    node = await _resolve(repo, args.node, ctx)
    updated = await repo.set_property(node.id, args.key, args.value)
    if updated is None:  # deleted between resolve and update
        raise ToolFailure(f"The node {node.id} no longer exists.")
    return _node_out(updated)


class DeleteNodeArgs(GraphScope):
    id: str = Field(min_length=1, description="The node to delete: id or exact name.")


async def delete_node(args: DeleteNodeArgs, ctx: ToolContext) -> dict[str, Any]:
    repo = repo_for(args, ctx)
    node = await _resolve(repo, args.id, ctx)
    removed = await repo.delete_node(node.id)
    return {"deleted": node.id, "name": node.name, "edges_removed": removed}


# -- undo: how an applied proposal is taken back (see `app.tools.base.Inverse`) -----------
# Entities are `node <id>` and `edge <id>`; a node's state includes its edges.


async def _state(
    args: GraphScope, entities: Sequence[str], ctx: ToolContext
) -> Mapping[str, str | None]:
    return await repo_for(args, ctx).digests(entities)


async def _added_node(args: AddNodeArgs, result: Any, before: Any, ctx: ToolContext) -> Undoable:
    return Undoable(touched=(f"node {result['id']}",), data={"node_id": result["id"]})


async def _remove_node(args: GraphScope, data: Mapping[str, Any], ctx: ToolContext) -> None:
    await repo_for(args, ctx).delete_node(data["node_id"])


async def _connected(args: ConnectArgs, result: Any, before: Any, ctx: ToolContext) -> Undoable:
    ends = (f"node {result['source_id']}", f"node {result['target_id']}")
    return Undoable(touched=(f"edge {result['id']}", *ends), data={"edge_id": result["id"]})


async def _disconnect(args: GraphScope, data: Mapping[str, Any], ctx: ToolContext) -> None:
    if not await repo_for(args, ctx).delete_edge(data["edge_id"]):
        raise ToolFailure(f"The edge {data['edge_id']} no longer exists.")


async def _properties_before(args: SetPropertyArgs, ctx: ToolContext) -> dict[str, Any]:
    node = await _resolve(repo_for(args, ctx), args.node, ctx)
    return {"node_id": node.id, "properties": node.properties}


async def _property_set(
    args: SetPropertyArgs, result: Any, before: Any, ctx: ToolContext
) -> Undoable:
    return Undoable(touched=(f"node {before['node_id']}",), data=before)


async def _restore_properties(args: GraphScope, data: Mapping[str, Any], ctx: ToolContext) -> None:
    if not await repo_for(args, ctx).replace_properties(data["node_id"], data["properties"]):
        raise ToolFailure(f"The node {data['node_id']} no longer exists.")


async def _snapshot_before(args: DeleteNodeArgs, ctx: ToolContext) -> dict[str, Any] | None:
    repo = repo_for(args, ctx)
    return await repo.snapshot((await _resolve(repo, args.id, ctx)).id)


async def _node_deleted(
    args: DeleteNodeArgs, result: Any, before: Any, ctx: ToolContext
) -> Undoable:
    touched = {f"node {before['node']['id']}"}
    for edge in before["edges"]:
        touched |= {f"edge {edge['id']}", f"node {edge['source_id']}", f"node {edge['target_id']}"}
    return Undoable(touched=tuple(sorted(touched)), data={"snapshot": before})


async def _restore_node(args: GraphScope, data: Mapping[str, Any], ctx: ToolContext) -> None:
    await repo_for(args, ctx).restore(data["snapshot"])


def tools() -> list[ServerTool[Any]]:
    return [
        ServerTool(
            name="find_nodes",
            description="Search the knowledge graph for nodes by text and/or label.",
            args_model=FindNodesArgs,
            handler=find_nodes,
            keywords=(
                "node",
                "nodes",
                "search the graph",
                "find in the graph",
                "узел",
                "узлы",
                "поиск по графу",
                "найди в графе",
            ),
            examples=("Найти узлы графа знаний по тексту или метке.",),
        ),
        ServerTool(
            name="get_graph",
            description="Return the whole knowledge graph: nodes and edges.",
            args_model=GetGraphArgs,
            handler=get_graph,
            keywords=(
                "graph",
                "knowledge graph",
                "whole graph",
                "граф",
                "граф знаний",
                "весь граф",
            ),
            examples=("Показать весь граф знаний: узлы и связи.",),
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
            inverse=Inverse(after=_added_node, state=_state, revert=_remove_node),
            keywords=(
                "add a node",
                "new node",
                "add node",
                "добавь узел",
                "новый узел",
                "добавить узел",
            ),
            examples=("Добавить узел в граф знаний.",),
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
            inverse=Inverse(after=_connected, state=_state, revert=_disconnect),
            keywords=(
                "connect",
                "link",
                "relation",
                "edge",
                "связь",
                "связать",
                "соедини",
                "соединить",
                "ребро",
            ),
            examples=("Связать два узла графа типизированной связью.",),
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
            inverse=Inverse(
                after=_property_set,
                state=_state,
                revert=_restore_properties,
                before=_properties_before,
            ),
            keywords=("property", "attribute", "свойство", "атрибут"),
            examples=("Предложить установить свойство узла графа.",),
        ),
        ServerTool(
            name="delete_node",
            description="Delete a node and all its edges. A human must approve it first.",
            args_model=DeleteNodeArgs,
            handler=delete_node,
            policy="confirm",
            mutates=True,
            summarize=lambda a: f"Delete the node {a.id!r} and all its edges",
            inverse=Inverse(
                after=_node_deleted,
                state=_state,
                revert=_restore_node,
                before=_snapshot_before,
            ),
            keywords=(
                "delete node",
                "remove node",
                "delete the node",
                "удали узел",
                "узел",
                "удалить узел",
            ),
            examples=("Удалить узел графа и все его связи (нужно подтверждение).",),
        ),
    ]


def register(registry: ToolRegistry) -> None:
    for tool in tools():
        registry.register(tool)
