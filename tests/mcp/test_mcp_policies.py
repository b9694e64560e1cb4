"""An MCP tool under our policies: proposed and applied in a batch, audited, kept from
callers without the role, and its pinned scope applied when a stored call finally runs."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.domain.tooling import ApprovalNeeded
from app.store.tables.core import AuditRow
from app.toolruntime.approvals import ApprovalService
from app.toolruntime.proposals import ProposalService
from tests.mcp.conftest import HttpServer, Mount, http_config
from tests.tools.conftest import ALICE, call, new_conversation, run_ctx, store_waiting


async def test_a_propose_tool_is_queued_then_the_approved_batch_calls_the_server(
    mount: Mount, http_server: HttpServer, db_sessions: async_sessionmaker[AsyncSession]
) -> None:
    mounted = await mount(http_config(http_server, policy="propose"))
    cid = await new_conversation(db_sessions, "alice")

    receipt = await mounted.outcome(
        "web__note", {"text": "hi"}, cid=cid, scope={"workspace_id": "ws_1"}
    )

    assert receipt.status == "success"
    assert receipt.result["proposed"] is True
    batch = await ProposalService(mounted.runtime).approve(ALICE, cid)
    assert [c.result for c in batch.applied] == [{"workspace_id": "ws_1", "text": "hi"}]


async def test_a_confirmed_call_runs_on_the_server_with_its_pinned_scope(
    mount: Mount, http_server: HttpServer, db_sessions: async_sessionmaker[AsyncSession]
) -> None:
    mounted = await mount(http_config(http_server, tools={"note": {"policy": "confirm"}}))
    cid = await new_conversation(db_sessions, "alice")
    needed = await mounted.invoke(
        "web__note",
        {"text": "hi", "workspace_id": "ws_evil"},
        cid=cid,
        scope={"workspace_id": "ws_1"},
    )
    assert isinstance(needed, ApprovalNeeded)
    part = call("web__note", needed.args)
    await store_waiting(db_sessions, "alice", cid, part, args={part.id: needed.args})

    decided = await ApprovalService(mounted.runtime).decide(ALICE, needed.approval_id, "approve")

    assert decided.part is not None
    assert decided.part.data.status == "success"
    assert decided.part.data.result == {"workspace_id": "ws_1", "text": "hi"}


async def test_mutating_calls_are_audited_and_read_only_ones_are_not(
    mount: Mount, http_server: HttpServer, db_sessions: async_sessionmaker[AsyncSession]
) -> None:
    mounted = await mount(http_config(http_server, tools={"echo": {"mutates": False}}))

    await mounted.outcome("web__add", {"a": 1, "b": 2})
    await mounted.outcome("web__echo", {"text": "x"})

    async with db_sessions() as s:
        rows = (await s.scalars(select(AuditRow).where(AuditRow.action == "tool.call"))).all()
    assert [(r.target_id, r.actor_id, (r.details or {})["outcome"]) for r in rows] == [
        ("web__add", "alice", "success")
    ]


async def test_a_servers_roles_keep_its_tools_from_other_callers(
    mount: Mount, http_server: HttpServer
) -> None:
    mounted = await mount(http_config(http_server, roles=["admin"]))

    assert mounted.runtime.specs(run_ctx(ALICE, None)) == []
    refused = await mounted.outcome("web__add", {"a": 1, "b": 2})
    assert refused.result["error"] == "The tool `web__add` is not available."


async def test_the_deployments_deny_list_applies_to_mounted_names(
    mount: Mount, http_server: HttpServer
) -> None:
    mounted = await mount(http_config(http_server), deny=("web__*",))

    assert mounted.runtime.specs(run_ctx(ALICE, None)) == []
