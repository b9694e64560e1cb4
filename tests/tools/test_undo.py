"""Undo of a batch at the runtime: tools' inverses (a deleted node comes back with its
edges and ids), who may undo, and a tool that cannot be undone."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.domain.errors import ChatBffError, NotFound
from app.domain.identity import Caller
from app.domain.tooling import ToolOutcome
from app.examples.graph import tools as graph
from app.examples.graph.tables import GraphEdgeRow, GraphNodeRow
from app.store.tables.tools import ProposalBatchRow
from app.toolruntime.proposals import ProposalService
from app.toolruntime.runtime import ServerToolRuntime
from app.toolruntime.undo import BatchUndo, UndoConflict
from app.tools.base import ServerTool, ToolContext
from app.tools.registry import ToolRegistry
from tests.tools.conftest import ALICE, MALLORY, TargetArgs, call, new_conversation, run_ctx

ROOT = Caller(user_id="root", roles=frozenset({"admin"}))


@pytest.fixture
def registry() -> ToolRegistry:
    """The example graph, with `delete_node` proposed instead of confirmed, and a
    proposed tool that does not say how to undo it."""

    async def stamp(args: TargetArgs, ctx: ToolContext) -> dict[str, Any]:
        return {"stamped": args.target}

    registry = ToolRegistry()
    for tool in graph.tools():
        registry.register(
            dataclasses.replace(tool, policy="propose") if tool.name == "delete_node" else tool
        )
    registry.register(
        ServerTool(
            name="stamp",
            description="No inverse.",
            args_model=TargetArgs,
            handler=stamp,
            policy="propose",
            mutates=True,
        )
    )
    return registry


async def _run(
    runtime: ServerToolRuntime, cid: str, name: str, args: dict[str, Any], call_id: str
) -> Any:
    outcome = await runtime.invoke(call(name, args, call_id), run_ctx(ALICE, cid, mode="propose"))
    assert isinstance(outcome, ToolOutcome) and outcome.status == "success", outcome
    return outcome.result


async def _rows(sessions: async_sessionmaker[AsyncSession]) -> tuple[set[str], set[str]]:
    async with sessions() as s:
        nodes = {n.id for n in await s.scalars(select(GraphNodeRow))}
        edges = {
            f"{e.id}:{e.source_id}->{e.target_id}" for e in await s.scalars(select(GraphEdgeRow))
        }
    return nodes, edges


async def _built_graph(runtime: ServerToolRuntime, cid: str) -> None:
    await _run(runtime, cid, "add_node", {"label": "Person", "name": "Ada"}, "c1")
    await _run(runtime, cid, "add_node", {"label": "Machine", "name": "AE"}, "c2")
    await _run(runtime, cid, "connect", {"source": "Ada", "target": "AE", "relation": "d"}, "c3")
    await ProposalService(runtime).approve(ALICE, cid)


@pytest.fixture
async def cid(db_sessions: async_sessionmaker[AsyncSession]) -> str:
    return await new_conversation(db_sessions, "alice", mode="propose")


async def test_an_undone_delete_restores_the_node_and_its_edges_with_their_ids(
    runtime: ServerToolRuntime, db_sessions: async_sessionmaker[AsyncSession], cid: str
) -> None:
    await _built_graph(runtime, cid)
    before = await _rows(db_sessions)
    await _run(runtime, cid, "delete_node", {"id": "Ada"}, "c4")
    await ProposalService(runtime).approve(ALICE, cid)
    assert len((await _rows(db_sessions))[0]) == 1

    undone = await BatchUndo(runtime).undo(ALICE, cid)

    assert [c.tool_name for c in undone.undone] == ["delete_node"]
    assert await _rows(db_sessions) == before


async def test_an_admin_may_undo_another_users_batch_in_that_users_graph(
    runtime: ServerToolRuntime, db_sessions: async_sessionmaker[AsyncSession], cid: str
) -> None:
    await _built_graph(runtime, cid)

    with pytest.raises(NotFound):
        await BatchUndo(runtime).undo(MALLORY, cid)
    await BatchUndo(runtime).undo(ROOT, cid)

    assert await _rows(db_sessions) == (set(), set())


async def test_a_batch_with_a_tool_without_inverse_is_not_undoable(
    runtime: ServerToolRuntime, db_sessions: async_sessionmaker[AsyncSession], cid: str
) -> None:
    await _run(runtime, cid, "add_node", {"label": "Person", "name": "Ada"}, "c1")
    await _run(runtime, cid, "stamp", {"target": "x"}, "c2")
    await ProposalService(runtime).approve(ALICE, cid)

    with pytest.raises(UndoConflict) as caught:
        await BatchUndo(runtime).undo(ALICE, cid)

    assert caught.value.code == "not_undoable"
    assert len((await _rows(db_sessions))[0]) == 1


async def test_only_the_approver_or_an_admin_may_undo(
    runtime: ServerToolRuntime, db_sessions: async_sessionmaker[AsyncSession], cid: str
) -> None:
    await _built_graph(runtime, cid)
    async with db_sessions.begin() as s:
        for row in await s.scalars(select(ProposalBatchRow)):
            row.approved_by = "a-colleague"

    with pytest.raises(ChatBffError) as caught:
        await BatchUndo(runtime).undo(ALICE, cid)

    assert caught.value.status == 403
    assert caught.value.code == "not_approver"
