"""Property: whatever scope ids the model puts in a tool call, it reads and writes only the
caller's own scope. Checked against the graph tables themselves, on SQLite and Postgres.

Each example seeds other scopes (another user; the same user's other workspace), then
plays tool calls whose every declared scope argument carries another scope's id, and whose
node references name other scopes' nodes, in auto and propose mode, through approvals
(with edited arguments) and proposal batches. Afterwards every row outside the caller's
scope is exactly as before, and no successful result shows another scope's data.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.domain.errors import ChatBffError
from app.domain.tooling import ApprovalNeeded, ToolOutcome
from app.examples.graph import tools as graph
from app.examples.graph.repo import GraphRepo
from app.examples.graph.tables import GraphEdgeRow, GraphNodeRow
from app.store.database import Database
from app.store.db import create_engine, session_factory
from app.toolruntime.approvals import ApprovalService
from app.toolruntime.proposals import ProposalService
from app.toolruntime.runtime import ServerToolRuntime
from app.tools.catalog import ToolCatalog
from app.tools.registry import ToolRegistry
from tests.tools.conftest import ALICE, call, new_conversation, run_ctx, store_waiting

SCOPE_ARGS = ("user_id", "conversation_id", "workspace_id", "session_id")
FOREIGN_IDS = ["bob", "conv_bob", "user:bob", "ws-other", "sess_bob", "", "alice2", "*", "%"]

foreign_value = st.sampled_from(FOREIGN_IDS) | st.text(max_size=12)
node_ref = st.sampled_from(["victim", "Mine", "Secret", "Secret-bob", "Secret-ws"]) | st.text(
    min_size=1, max_size=8
)
tool_call = st.one_of(
    st.tuples(
        st.just("find_nodes"),
        st.fixed_dictionaries({"query": st.sampled_from(["", "e", "Secret"])}),
    ),
    st.tuples(st.just("get_graph"), st.just({})),
    st.tuples(
        st.just("add_node"),
        st.fixed_dictionaries(
            {"label": st.just("X"), "name": st.text(alphabet="abcxyz ", min_size=1, max_size=8)}
        ),
    ),
    st.tuples(
        st.just("connect"),
        st.fixed_dictionaries({"source": node_ref, "target": node_ref, "relation": st.just("r")}),
    ),
    st.tuples(st.just("delete_node"), st.fixed_dictionaries({"id": node_ref})),
    st.tuples(
        st.just("set_property"),
        st.fixed_dictionaries({"node": node_ref, "key": st.just("k"), "value": st.just(1)}),
    ),
)
scenario = st.fixed_dictionaries(
    {
        "calls": st.lists(
            st.tuples(tool_call, st.fixed_dictionaries({k: foreign_value for k in SCOPE_ARGS})),
            min_size=1,
            max_size=6,
        ),
        "mode": st.sampled_from(["auto", "propose"]),
    }
)


async def _rows(sessions: async_sessionmaker[AsyncSession]) -> tuple[set[Any], set[Any]]:
    async with sessions() as s:
        nodes = {
            (n.id, n.scope_key, n.name, str(n.properties))
            for n in await s.scalars(select(GraphNodeRow))
        }
        edges = {
            (e.id, e.scope_key, e.source_id, e.target_id)
            for e in await s.scalars(select(GraphEdgeRow))
        }
    return nodes, edges


async def _seed_victims(sessions: async_sessionmaker[AsyncSession]) -> list[str]:
    """Other scopes' nodes; their ids join the references the model may use."""
    victims = [
        (graph.scope_key("bob", "user:bob"), "Secret-bob"),
        (graph.scope_key("alice", "ws-other"), "Secret-ws"),
        (graph.scope_key("alice", None, "conv_other"), "Secret"),
    ]
    ids = []
    async with sessions.begin() as s:
        for key, name in victims:
            a = await GraphRepo(s, key).add_node("Person", name, {"secret": True})
            b = await GraphRepo(s, key).add_node("Person", "victim", {})
            await GraphRepo(s, key).connect(a.id, b.id, "knows")
            ids += [a.id, b.id]
    return ids


def _swap_refs(args: dict[str, Any], victim_ids: list[str], draw: int) -> dict[str, Any]:
    """Point some node references at other scopes' real node ids."""
    out = dict(args)
    for key in ("source", "target", "id", "node"):
        if key in out and draw % 2:
            out[key] = victim_ids[draw % len(victim_ids)]
        draw //= 2
    return out


async def _play(url: str, example: dict[str, Any]) -> None:
    engine = create_engine(url)
    sessions = session_factory(engine)
    try:
        registry = ToolRegistry()
        graph.register(registry)
        runtime = ServerToolRuntime(ToolCatalog(registry), Database(engine))
        victim_ids = await _seed_victims(sessions)
        cid = await new_conversation(sessions, "alice", mode=example["mode"])
        scope = {"workspace_id": "user:alice", "session_id": cid}
        own_key = graph.scope_key("alice", "user:alice")
        async with sessions.begin() as s:
            await GraphRepo(s, own_key).add_node("Person", "Mine", {})
        before_nodes, before_edges = await _rows(sessions)
        run_id = f"run_{uuid.uuid4().hex}"
        ctx = run_ctx(ALICE, cid, run_id=run_id, mode=example["mode"], scope=scope)
        results: list[Any] = []

        for index, ((name, args), scope_args) in enumerate(example["calls"]):
            sent = {**_swap_refs(args, victim_ids, index * 7 + len(str(args))), **scope_args}
            part = call(name, sent, f"call_{index}")
            outcome = await runtime.invoke(part, ctx)
            if isinstance(outcome, ApprovalNeeded):
                await store_waiting(
                    sessions, "alice", cid, part, run_id=run_id, args={part.id: outcome.args}
                )
                edited = {**(outcome.args or {}), **scope_args}
                try:
                    decided = await ApprovalService(runtime).decide(
                        ALICE, outcome.approval_id, "approve", args=edited
                    )
                except ChatBffError:
                    continue
                if decided.part is not None and decided.part.data.status == "success":
                    results.append(decided.part.data.result)
            elif isinstance(outcome, ToolOutcome) and outcome.status == "success":
                result = outcome.result
                if result.get("proposed"):  # a receipt's summary only echoes the call itself
                    result = {k: v for k, v in result.items() if k != "summary"}
                results.append(result)
        try:
            batch = await ProposalService(runtime).approve(ALICE, cid)
            results += [change.result for change in batch.applied]
        except ChatBffError:
            pass

        after_nodes, after_edges = await _rows(sessions)

        def outside(rows: set[tuple[Any, ...]]) -> set[tuple[Any, ...]]:
            return {r for r in rows if r[1] != own_key}

        assert outside(after_nodes) == outside(before_nodes), "a write reached another scope"
        assert outside(after_edges) == outside(before_edges), "a write reached another scope"
        own_nodes = {r[0] for r in after_nodes if r[1] == own_key}
        for _, key, source, target in after_edges:
            if key == own_key:
                assert {source, target} <= own_nodes, "an edge reached another scope's node"
        shown = repr(results)
        assert "Secret" not in shown, "a read showed another scope's data"
        assert not any(v in shown for v in victim_ids), "a result named another scope's node"
    finally:
        await engine.dispose()


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(example=scenario)
def test_tool_calls_never_reach_outside_the_callers_scope(
    migrated_database_url: str, example: dict[str, Any]
) -> None:
    asyncio.run(_play(migrated_database_url, example))
