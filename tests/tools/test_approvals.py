"""No path runs a `confirm` tool without a stored approval a human decided."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from app.domain.errors import ChatBffError, Conflict, NotFound
from app.domain.messages import Message
from app.domain.tooling import ApprovalNeeded, ToolOutcome
from app.examples.graph.tables import GraphNodeRow
from app.store.database import Database
from app.store.db import create_engine, session_factory
from app.store.repos import MessageRepo
from app.store.tables.core import AuditRow
from app.toolruntime.approvals import ApprovalService, Unprocessable
from app.toolruntime.runtime import ServerToolRuntime
from app.toolruntime.stored_parts import find_part, standing
from tests.tools.conftest import (
    ALICE,
    MALLORY,
    Calls,
    MakeRuntime,
    call,
    new_conversation,
    run_ctx,
    store_waiting,
    stored_part,
)


async def _pending(
    runtime: ServerToolRuntime,
    sessions: async_sessionmaker[AsyncSession],
    args: dict[str, Any] | None = None,
    *,
    call_id: str = "call_1",
    store: bool = True,
) -> tuple[str, str]:
    """A paused run: an approval asked for and the waiting part stored."""
    cid = await new_conversation(sessions, "alice")
    part = call("danger", args or {"target": "prod"}, call_id)
    needed = await runtime.invoke(part, run_ctx(ALICE, cid))
    assert isinstance(needed, ApprovalNeeded)
    if store:
        await store_waiting(sessions, "alice", cid, part, args={call_id: needed.args})
    return cid, needed.approval_id


async def test_approve_runs_the_tool_once_and_updates_the_stored_part(
    runtime: ServerToolRuntime, calls: Calls, db_sessions: async_sessionmaker[AsyncSession]
) -> None:
    cid, approval_id = await _pending(runtime, db_sessions)

    result = await ApprovalService(runtime).decide(ALICE, approval_id, "approve")

    assert calls.danger == [{"target": "prod", "user_id": "alice"}]
    assert result.approval.status == "approved"
    assert result.approval.outcome_status == "success"
    assert result.ready_to_resume is True
    part = await stored_part(db_sessions, "alice", cid, "call_1")
    assert part.data.status == "success"
    assert part.data.result == {"done": "prod"}
    assert part.data.mutates is True
    assert result.part == part


async def test_a_second_decision_is_already_decided_and_never_reruns(
    runtime: ServerToolRuntime, calls: Calls, db_sessions: async_sessionmaker[AsyncSession]
) -> None:
    _, approval_id = await _pending(runtime, db_sessions)
    service = ApprovalService(runtime)
    await service.decide(ALICE, approval_id, "approve")

    for decision in ("approve", "reject"):
        with pytest.raises(Conflict) as caught:
            await service.decide(ALICE, approval_id, decision)
        assert caught.value.code == "already_decided"
    assert len(calls.danger) == 1


async def test_concurrent_approvals_run_the_tool_once(
    runtime: ServerToolRuntime, calls: Calls, db_sessions: async_sessionmaker[AsyncSession]
) -> None:
    _, approval_id = await _pending(runtime, db_sessions)
    service = ApprovalService(runtime)

    results = await asyncio.gather(
        *(service.decide(ALICE, approval_id, "approve") for _ in range(6)),
        return_exceptions=True,
    )

    assert len(calls.danger) == 1
    assert sum(not isinstance(r, BaseException) for r in results) == 1
    assert all(
        isinstance(r, Conflict) and r.code == "already_decided"
        for r in results
        if isinstance(r, BaseException)
    )


async def test_a_replayed_call_after_approval_answers_the_stored_result_without_running(
    runtime: ServerToolRuntime, calls: Calls, db_sessions: async_sessionmaker[AsyncSession]
) -> None:
    cid, approval_id = await _pending(runtime, db_sessions)
    await ApprovalService(runtime).decide(ALICE, approval_id, "approve")

    replay = await runtime.invoke(call("danger", {"target": "prod"}), run_ctx(ALICE, cid))

    assert isinstance(replay, ToolOutcome)
    assert replay.status == "success" and replay.result == {"done": "prod"}
    assert len(calls.danger) == 1


async def test_the_same_call_id_with_other_arguments_is_refused(
    runtime: ServerToolRuntime, calls: Calls, db_sessions: async_sessionmaker[AsyncSession]
) -> None:
    cid, _ = await _pending(runtime, db_sessions)

    other = await runtime.invoke(call("danger", {"target": "everything"}), run_ctx(ALICE, cid))

    assert isinstance(other, ToolOutcome) and other.status == "error"
    assert calls.danger == []


async def test_reject_gives_the_model_a_rejection_and_never_runs(
    runtime: ServerToolRuntime, calls: Calls, db_sessions: async_sessionmaker[AsyncSession]
) -> None:
    cid, approval_id = await _pending(runtime, db_sessions)

    result = await ApprovalService(runtime).decide(
        ALICE, approval_id, "reject", reason="not on a Friday"
    )

    assert calls.danger == []
    assert result.approval.status == "rejected"
    part = await stored_part(db_sessions, "alice", cid, "call_1")
    assert part.data.status == "error"
    assert part.data.result == {"error": "rejected by the user", "reason": "not on a Friday"}


async def test_edited_arguments_are_pinned_and_validated_again(
    runtime: ServerToolRuntime, calls: Calls, db_sessions: async_sessionmaker[AsyncSession]
) -> None:
    cid, approval_id = await _pending(runtime, db_sessions)
    service = ApprovalService(runtime)

    with pytest.raises(Unprocessable):
        await service.decide(ALICE, approval_id, "approve", args={"target": "x", "rm": "-rf"})
    assert calls.danger == []  # still pending: a valid edit may follow

    await service.decide(
        ALICE, approval_id, "approve", args={"target": "staging", "user_id": "mallory"}
    )

    assert calls.danger == [{"target": "staging", "user_id": "alice"}]
    part = await stored_part(db_sessions, "alice", cid, "call_1")
    assert part.data.args == {"target": "staging"}


async def test_an_expired_approval_is_refused_and_never_runs(
    make_runtime: MakeRuntime,
    calls: Calls,
    db: Database,
    db_sessions: async_sessionmaker[AsyncSession],
) -> None:
    runtime = make_runtime(db, ttl=0.5)
    _, approval_id = await _pending(runtime, db_sessions)
    await asyncio.sleep(0.6)

    with pytest.raises(Conflict) as caught:
        await ApprovalService(runtime).decide(ALICE, approval_id, "approve")

    assert caught.value.code == "approval_expired"
    assert calls.danger == []
    assert await ApprovalService(runtime).inbox(ALICE) == []


async def test_another_users_or_a_forged_approval_is_not_found(
    runtime: ServerToolRuntime, calls: Calls, db_sessions: async_sessionmaker[AsyncSession]
) -> None:
    _, approval_id = await _pending(runtime, db_sessions)
    service = ApprovalService(runtime)

    for caller, target in ((MALLORY, approval_id), (ALICE, "appr_forged")):
        with pytest.raises(NotFound) as caught:
            await service.decide(caller, target, "approve")
        assert caught.value.code == "approval_not_found"
    assert calls.danger == []
    assert await service.inbox(MALLORY) == []


async def test_a_tool_part_whose_arguments_changed_is_refused(
    runtime: ServerToolRuntime, calls: Calls, db_sessions: async_sessionmaker[AsyncSession]
) -> None:
    cid = await new_conversation(db_sessions, "alice")
    part = call("danger", {"target": "prod"})
    needed = await runtime.invoke(part, run_ctx(ALICE, cid))
    assert isinstance(needed, ApprovalNeeded)
    await store_waiting(db_sessions, "alice", cid, part, args={"call_1": {"target": "all"}})

    with pytest.raises(Conflict) as caught:
        await ApprovalService(runtime).decide(ALICE, needed.approval_id, "approve")

    assert caught.value.code == "approval_args_mismatch"
    assert calls.danger == []


async def test_an_approval_before_its_part_is_stored_is_refused_as_not_ready(
    runtime: ServerToolRuntime, calls: Calls, db_sessions: async_sessionmaker[AsyncSession]
) -> None:
    _, approval_id = await _pending(runtime, db_sessions, store=False)

    with pytest.raises(ChatBffError) as caught:
        await ApprovalService(runtime).decide(ALICE, approval_id, "approve")

    assert caught.value.code == "approval_not_ready"
    assert caught.value.retryable is True
    assert calls.danger == []


async def test_the_conversation_waits_until_every_parallel_approval_is_decided(
    runtime: ServerToolRuntime, calls: Calls, db_sessions: async_sessionmaker[AsyncSession]
) -> None:
    cid = await new_conversation(db_sessions, "alice")
    parts = [call("danger", {"target": t}, f"call_{t}") for t in ("a", "b")]
    ctx = run_ctx(ALICE, cid)
    needed = await asyncio.gather(*(runtime.invoke(p, ctx) for p in parts))
    await store_waiting(db_sessions, "alice", cid, *parts)
    service = ApprovalService(runtime)
    ids = [n.approval_id for n in needed if isinstance(n, ApprovalNeeded)]

    first, second = await asyncio.gather(
        service.decide(ALICE, ids[0], "approve"), service.decide(ALICE, ids[1], "reject")
    )

    assert sorted([first.ready_to_resume, second.ready_to_resume]) == [False, True]
    assert (await stored_part(db_sessions, "alice", cid, "call_a")).data.status == "success"
    assert (await stored_part(db_sessions, "alice", cid, "call_b")).data.status == "error"
    assert calls.danger == [{"target": "a", "user_id": "alice"}]


async def test_a_decision_writes_an_audit_record(
    runtime: ServerToolRuntime, db_sessions: async_sessionmaker[AsyncSession]
) -> None:
    _, approval_id = await _pending(runtime, db_sessions)
    await ApprovalService(runtime).decide(ALICE, approval_id, "approve")

    async with db_sessions() as s:
        audit = (await s.scalars(select(AuditRow).where(AuditRow.target_id == approval_id))).one()
    assert audit.action == "approval.approve"
    assert audit.actor_id == "alice"
    assert audit.details is not None and audit.details["tool"] == "danger"


async def test_a_pending_approval_survives_a_restart(
    make_runtime: MakeRuntime,
    calls: Calls,
    db_engine: AsyncEngine,
    migrated_database_url: str,
) -> None:
    before = make_runtime(Database(db_engine))
    _, approval_id = await _pending(before, session_factory(db_engine))
    await db_engine.dispose()

    engine = create_engine(migrated_database_url)
    try:
        after = ApprovalService(make_runtime(Database(engine)))
        assert [a.id for a in await after.inbox(ALICE)] == [approval_id]
        result = await after.decide(ALICE, approval_id, "approve")
    finally:
        await engine.dispose()

    assert result.approval.status == "approved"
    assert calls.danger == [{"target": "prod", "user_id": "alice"}]


async def test_delete_node_asks_first_and_deletes_only_after_approval(
    runtime: ServerToolRuntime, db_sessions: async_sessionmaker[AsyncSession]
) -> None:
    cid = await new_conversation(db_sessions, "alice")
    ctx = run_ctx(ALICE, cid)
    await runtime.invoke(call("add_node", {"label": "Person", "name": "Ada"}, "c0"), ctx)
    part = call("delete_node", {"id": "Ada"})
    needed = await runtime.invoke(part, ctx)
    assert isinstance(needed, ApprovalNeeded)
    assert needed.summary == "Delete the node 'Ada' and all its edges"
    async with db_sessions() as s:
        assert len((await s.scalars(select(GraphNodeRow))).all()) == 1

    await store_waiting(db_sessions, "alice", cid, part, args={"call_1": needed.args})
    result = await ApprovalService(runtime).decide(ALICE, needed.approval_id, "approve")

    assert result.part is not None
    assert isinstance(result.part.data.result, dict) and result.part.data.result["name"] == "Ada"
    async with db_sessions() as s:
        assert (await s.scalars(select(GraphNodeRow))).all() == []


async def test_an_approval_of_a_stateless_run_answers_the_part_and_does_not_resume(
    runtime: ServerToolRuntime, calls: Calls
) -> None:
    needed = await runtime.invoke(call("danger", {"target": "prod"}), run_ctx(ALICE, None))
    assert isinstance(needed, ApprovalNeeded)

    result = await ApprovalService(runtime).decide(ALICE, needed.approval_id, "approve")

    assert calls.danger == [{"target": "prod", "user_id": "alice"}]
    assert result.ready_to_resume is False
    assert result.part is not None
    assert result.part.data.status == "success"
    assert result.part.data.args == {"target": "prod"}


async def test_a_stateless_runs_call_stands_in_no_conversation(
    runtime: ServerToolRuntime,
) -> None:
    """Asked where a stateless turn's call stands, the answer is nowhere: no stored part,
    neither an error nor, under `python -O`, a query for a conversation of None."""
    needed = await runtime.invoke(call("danger", {"target": "prod"}), run_ctx(ALICE, None))
    assert isinstance(needed, ApprovalNeeded)
    async with runtime.db.read() as tx:
        record = await tx.approvals.get("alice", needed.approval_id)
        assert await standing(tx.messages, record) is None
        assert await find_part(tx.messages, record) is None


async def test_an_approval_whose_call_was_cancelled_leaves_the_inbox_and_never_runs(
    runtime: ServerToolRuntime, calls: Calls, db_sessions: async_sessionmaker[AsyncSession]
) -> None:
    cid = await new_conversation(db_sessions, "alice")
    part = call("danger", {"target": "prod"})
    needed = await runtime.invoke(part, run_ctx(ALICE, cid))
    assert isinstance(needed, ApprovalNeeded)
    cancelled = part.model_copy(
        update={"data": part.data.model_copy(update={"status": "cancelled"})}
    )
    async with db_sessions.begin() as s:
        await MessageRepo(s).append(
            "alice", cid, Message(role="assistant", content=[cancelled]), run_id="run_1"
        )
    service = ApprovalService(runtime)

    with pytest.raises(Conflict) as caught:
        await service.decide(ALICE, needed.approval_id, "approve")

    assert caught.value.extra["decision"] == "cancelled"
    assert await service.inbox(ALICE) == []
    assert calls.danger == []


async def test_the_run_manager_can_close_a_cancelled_runs_approvals(
    runtime: ServerToolRuntime, calls: Calls, db_sessions: async_sessionmaker[AsyncSession]
) -> None:
    _, approval_id = await _pending(runtime, db_sessions)
    service = ApprovalService(runtime)

    await runtime.run_cancelled("alice", "run_1")

    assert await service.inbox(ALICE) == []
    with pytest.raises(Conflict):
        await service.decide(ALICE, approval_id, "approve")
    assert calls.danger == []
