"""The runtime as the agent loop sees it: pin, validate, policy, timeout, never raise."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.domain.tooling import ApprovalNeeded, ToolOutcome
from app.examples.graph.tables import GraphNodeRow
from app.store.database import Database
from app.store.tables.tools import ApprovalRow, ProposalRow
from app.toolruntime.runtime import ServerToolRuntime
from tests.tools.conftest import ALICE, Calls, MakeRuntime, call, new_conversation, run_ctx


async def _invoke(runtime: ServerToolRuntime, name: str, args: Any, **ctx: Any) -> ToolOutcome:
    outcome = await runtime.invoke(call(name, args), run_ctx(ALICE, ctx.pop("cid", None), **ctx))
    assert isinstance(outcome, ToolOutcome)
    return outcome


async def _count(sessions: async_sessionmaker[AsyncSession], table: Any) -> int:
    async with sessions() as s:
        return int(await s.scalar(select(func.count()).select_from(table)) or 0)


async def test_an_undeclared_argument_is_an_error_for_the_model_and_the_handler_never_runs(
    runtime: ServerToolRuntime, calls: Calls
) -> None:
    outcome = await _invoke(runtime, "echo", {"target": "x", "api_base": "http://evil"})

    assert outcome.status == "error"
    assert "api_base" in outcome.result["error"]
    assert "not declared" in outcome.result["error"]
    assert calls.echo == []


async def test_invalid_arguments_are_a_readable_error_and_the_handler_never_runs(
    runtime: ServerToolRuntime, calls: Calls
) -> None:
    outcome = await _invoke(runtime, "echo", {"target": 42})

    assert outcome.status == "error"
    assert outcome.result["error"].startswith("Invalid arguments: target:")
    assert calls.echo == []


async def test_the_model_sees_no_scope_arguments_and_no_extra_properties(
    runtime: ServerToolRuntime,
) -> None:
    specs = {s.name: s for s in runtime.specs(run_ctx(ALICE, None))}

    params = specs["add_node"].parameters
    assert params["additionalProperties"] is False
    assert set(params["properties"]) == {"label", "name", "properties"}
    assert params["required"] == ["label", "name"]


async def test_a_scope_argument_is_overwritten_with_the_callers_own(
    runtime: ServerToolRuntime, calls: Calls
) -> None:
    outcome = await _invoke(runtime, "echo", {"target": "x", "user_id": "mallory"})

    assert outcome.status == "success"
    assert calls.echo == [{"target": "x", "user_id": "alice"}]
    assert outcome.args == {"target": "x"}  # pinned values are not echoed to the model


async def test_a_tool_that_raises_is_an_error_result_without_internal_details(
    runtime: ServerToolRuntime,
) -> None:
    outcome = await _invoke(runtime, "boom", {})

    assert outcome.status == "error"
    assert "failed unexpectedly" in outcome.result["error"]
    assert "secret internal detail" not in str(outcome.result)


async def test_a_tool_past_its_timeout_is_an_error_result(runtime: ServerToolRuntime) -> None:
    started = time.monotonic()
    outcome = await _invoke(runtime, "slow", {"seconds": 5})

    assert outcome.status == "error"
    assert "timed out after 0.05s" in outcome.result["error"]
    assert time.monotonic() - started < 2


async def test_parallel_calls_run_concurrently(runtime: ServerToolRuntime) -> None:
    ctx = run_ctx(ALICE, None)
    started = time.monotonic()
    outcomes = await asyncio.gather(
        *(runtime.invoke(call("nap", {"seconds": 0.3}, f"c{i}"), ctx) for i in range(5))
    )

    assert all(isinstance(o, ToolOutcome) and o.status == "success" for o in outcomes)
    assert time.monotonic() - started < 1.2


async def test_a_tool_the_callers_roles_do_not_allow_is_hidden_and_refused(
    runtime: ServerToolRuntime,
) -> None:
    assert "admin_tool" not in {s.name for s in runtime.specs(run_ctx(ALICE, None))}

    outcome = await _invoke(runtime, "admin_tool", {})

    assert outcome.status == "error"
    assert "not available" in outcome.result["error"]


async def test_deny_lists_hide_and_refuse_per_deployment_and_per_model(
    make_runtime: MakeRuntime, db: Database, calls: Calls
) -> None:
    runtime = make_runtime(db, deny=("nap",), model_deny={"scripted": ("echo",)})
    names = {s.name for s in runtime.specs(run_ctx(ALICE, None))}

    assert "nap" not in names
    assert "echo" not in names
    assert "add_node" in names
    assert not runtime.knows("nap")
    assert (await _invoke(runtime, "echo", {"target": "x"})).status == "error"
    assert calls.echo == []


async def test_an_allow_list_offers_only_what_it_names(
    make_runtime: MakeRuntime, db: Database
) -> None:
    runtime = make_runtime(db, allow=("find_*", "get_graph"))

    assert {s.name for s in runtime.specs(run_ctx(ALICE, None))} == {"find_nodes", "get_graph"}


async def test_a_confirm_tool_never_runs_on_invoke_it_stores_an_approval(
    runtime: ServerToolRuntime, calls: Calls, db_sessions: async_sessionmaker[AsyncSession]
) -> None:
    cid = await new_conversation(db_sessions, "alice")
    outcome = await runtime.invoke(call("danger", {"target": "prod"}), run_ctx(ALICE, cid))

    assert isinstance(outcome, ApprovalNeeded)
    assert outcome.summary == "Run danger(target='prod')"
    assert outcome.expires_at is not None and outcome.expires_at > time.time()
    assert calls.danger == []
    assert await _count(db_sessions, ApprovalRow) == 1


async def test_invoking_the_same_confirm_call_again_returns_the_same_approval(
    runtime: ServerToolRuntime, calls: Calls, db_sessions: async_sessionmaker[AsyncSession]
) -> None:
    cid = await new_conversation(db_sessions, "alice")
    ctx = run_ctx(ALICE, cid)
    first, second = await asyncio.gather(
        runtime.invoke(call("danger", {"target": "prod"}), ctx),
        runtime.invoke(call("danger", {"target": "prod"}), ctx),
    )
    third = await runtime.invoke(call("danger", {"target": "prod"}), ctx)

    assert isinstance(first, ApprovalNeeded) and isinstance(second, ApprovalNeeded)
    assert isinstance(third, ApprovalNeeded)
    assert first.approval_id == second.approval_id == third.approval_id
    assert calls.danger == []
    assert await _count(db_sessions, ApprovalRow) == 1


async def test_a_confirm_tool_in_propose_mode_still_needs_an_approval(
    runtime: ServerToolRuntime, calls: Calls, db_sessions: async_sessionmaker[AsyncSession]
) -> None:
    cid = await new_conversation(db_sessions, "alice", mode="propose")
    outcome = await runtime.invoke(
        call("danger", {"target": "prod"}), run_ctx(ALICE, cid, mode="propose")
    )

    assert isinstance(outcome, ApprovalNeeded)
    assert calls.danger == []
    assert await _count(db_sessions, ProposalRow) == 0


async def test_propose_mode_queues_writes_with_an_honest_receipt_and_reads_stay_live(
    runtime: ServerToolRuntime, db_sessions: async_sessionmaker[AsyncSession]
) -> None:
    cid = await new_conversation(db_sessions, "alice", mode="propose")
    ctx = run_ctx(ALICE, cid, mode="propose")

    first = await runtime.invoke(call("add_node", {"label": "Person", "name": "Ada"}, "c1"), ctx)
    second = await runtime.invoke(call("add_node", {"label": "Machine", "name": "AE"}, "c2"), ctx)
    read = await runtime.invoke(call("find_nodes", {}, "c3"), ctx)

    assert isinstance(first, ToolOutcome) and isinstance(second, ToolOutcome)
    assert first.result["proposed"] is True
    assert first.result["queued"] == 1 and second.result["queued"] == 2
    assert first.result["provisional_id"].startswith("prov_")
    assert first.mutates is False
    assert isinstance(read, ToolOutcome) and read.result == {"nodes": [], "count": 0}
    assert await _count(db_sessions, GraphNodeRow) == 0


async def test_a_propose_policy_tool_proposes_even_in_auto_mode(
    runtime: ServerToolRuntime, db_sessions: async_sessionmaker[AsyncSession]
) -> None:
    cid = await new_conversation(db_sessions, "alice")
    outcome = await runtime.invoke(
        call("set_property", {"node": "Ada", "key": "born", "value": 1815}), run_ctx(ALICE, cid)
    )

    assert isinstance(outcome, ToolOutcome)
    assert outcome.result["proposed"] is True
    assert "provisional_id" not in outcome.result


async def test_a_proposal_outside_a_conversation_is_refused(runtime: ServerToolRuntime) -> None:
    outcome = await _invoke(runtime, "set_property", {"node": "a", "key": "k", "value": 1})

    assert outcome.status == "error"
    assert "inside a conversation" in outcome.result["error"]


async def test_auto_writes_apply_at_once_and_report_mutates(
    runtime: ServerToolRuntime,
) -> None:
    added = await _invoke(runtime, "add_node", {"label": "Person", "name": "Ada"}, cid="conv_x")
    found = await _invoke(runtime, "find_nodes", {"query": "ad"}, cid="conv_x")

    assert added.status == "success" and added.mutates is True
    assert found.result["nodes"] == [added.result]
    assert found.mutates is False
