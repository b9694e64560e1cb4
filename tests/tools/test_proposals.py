"""The proposal queue: applied in order in ONE transaction, or not at all."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from sqlalchemy import delete as sa_delete
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.domain.errors import Conflict, NotFound
from app.domain.tooling import ToolOutcome
from app.examples.graph.tables import GraphEdgeRow, GraphNodeRow
from app.store.tables.core import AuditRow
from app.toolruntime.proposals import ProposalFailed, ProposalService
from app.toolruntime.runtime import ServerToolRuntime
from tests.tools.conftest import ALICE, MALLORY, call, new_conversation, run_ctx


async def _propose(
    runtime: ServerToolRuntime, cid: str, name: str, args: dict[str, Any], call_id: str
) -> dict[str, Any]:
    outcome = await runtime.invoke(call(name, args, call_id), run_ctx(ALICE, cid, mode="propose"))
    assert isinstance(outcome, ToolOutcome) and outcome.status == "success", outcome
    assert outcome.result["proposed"] is True
    result: dict[str, Any] = outcome.result
    return result


async def _graph(sessions: async_sessionmaker[AsyncSession]) -> tuple[list[str], list[str]]:
    async with sessions() as s:
        nodes = [n.name for n in await s.scalars(select(GraphNodeRow).order_by("created_at"))]
        edges = [e.relation for e in await s.scalars(select(GraphEdgeRow))]
    return nodes, edges


@pytest.fixture
async def cid(db_sessions: async_sessionmaker[AsyncSession]) -> str:
    return await new_conversation(db_sessions, "alice", mode="propose")


async def test_provisional_ids_resolve_to_the_real_ids_within_the_batch(
    runtime: ServerToolRuntime, db_sessions: async_sessionmaker[AsyncSession], cid: str
) -> None:
    ada = await _propose(runtime, cid, "add_node", {"label": "Person", "name": "Ada"}, "c1")
    engine = await _propose(runtime, cid, "add_node", {"label": "Machine", "name": "AE"}, "c2")
    await _propose(
        runtime,
        cid,
        "connect",
        {
            "source": ada["provisional_id"],
            "target": engine["provisional_id"],
            "relation": "designed",
        },
        "c3",
    )
    service = ProposalService(runtime)
    assert len(await service.queue(ALICE, cid)) == 3

    batch = await service.approve(ALICE, cid)

    added, _, edge = batch.applied
    assert added.provisional_id == ada["provisional_id"]
    assert added.real_id is not None and added.real_id.startswith("node_")
    assert edge.result["source"] == {"id": added.real_id, "name": "Ada"}
    assert edge.args["source"] == added.real_id
    assert await _graph(db_sessions) == (["Ada", "AE"], ["designed"])
    assert await service.queue(ALICE, cid) == []


async def test_one_failing_proposal_rolls_back_the_batch_and_keeps_the_queue(
    runtime: ServerToolRuntime, db_sessions: async_sessionmaker[AsyncSession], cid: str
) -> None:
    await _propose(runtime, cid, "add_node", {"label": "Person", "name": "Ada"}, "c1")
    bad = await _propose(
        runtime, cid, "connect", {"source": "Ada", "target": "Nobody", "relation": "knows"}, "c2"
    )
    await _propose(runtime, cid, "add_node", {"label": "Person", "name": "Charles"}, "c3")
    service = ProposalService(runtime)

    with pytest.raises(ProposalFailed) as caught:
        await service.approve(ALICE, cid)

    assert caught.value.status == 409
    assert caught.value.extra["proposal_id"] == bad["proposal_id"]
    assert "Nobody" in caught.value.extra["reason"]
    assert await _graph(db_sessions) == ([], [])
    assert len(await service.queue(ALICE, cid)) == 3


async def test_a_stale_proposal_fails_with_a_reason(
    runtime: ServerToolRuntime, db_sessions: async_sessionmaker[AsyncSession], cid: str
) -> None:
    live = await runtime.invoke(
        call("add_node", {"label": "Person", "name": "Ada"}, "c0"), run_ctx(ALICE, cid)
    )
    assert isinstance(live, ToolOutcome)
    node_id = live.result["id"]
    await _propose(runtime, cid, "set_property", {"node": node_id, "key": "k", "value": 1}, "c1")
    async with db_sessions.begin() as s:  # deleted since the proposal was made
        await s.execute(sa_delete(GraphNodeRow))

    with pytest.raises(ProposalFailed) as caught:
        await ProposalService(runtime).approve(ALICE, cid)

    assert node_id in caught.value.extra["reason"]
    assert "no node" in caught.value.extra["reason"].lower()


async def test_a_provisional_id_from_a_rejected_proposal_fails_safely(
    runtime: ServerToolRuntime, db_sessions: async_sessionmaker[AsyncSession], cid: str
) -> None:
    ada = await _propose(runtime, cid, "add_node", {"label": "Person", "name": "Ada"}, "c1")
    await _propose(runtime, cid, "add_node", {"label": "Machine", "name": "AE"}, "c2")
    link = await _propose(
        runtime,
        cid,
        "connect",
        {"source": ada["provisional_id"], "target": "AE", "relation": "designed"},
        "c3",
    )
    service = ProposalService(runtime)
    assert await service.reject(ALICE, cid, [ada["proposal_id"]]) == [ada["proposal_id"]]

    with pytest.raises(ProposalFailed) as caught:
        await service.approve(ALICE, cid)

    assert caught.value.extra["proposal_id"] == link["proposal_id"]
    assert ada["provisional_id"] in caught.value.extra["reason"]
    assert await _graph(db_sessions) == ([], [])


async def test_approving_chosen_ids_applies_only_those(
    runtime: ServerToolRuntime, db_sessions: async_sessionmaker[AsyncSession], cid: str
) -> None:
    ada = await _propose(runtime, cid, "add_node", {"label": "Person", "name": "Ada"}, "c1")
    await _propose(runtime, cid, "add_node", {"label": "Person", "name": "Charles"}, "c2")
    service = ProposalService(runtime)

    await service.approve(ALICE, cid, [ada["proposal_id"]])

    assert await _graph(db_sessions) == (["Ada"], [])
    assert [p.summary for p in await service.queue(ALICE, cid)] == ["Add Person node 'Charles'"]


async def test_reject_drops_some_or_all(
    runtime: ServerToolRuntime, db_sessions: async_sessionmaker[AsyncSession], cid: str
) -> None:
    first = await _propose(runtime, cid, "add_node", {"label": "P", "name": "A"}, "c1")
    await _propose(runtime, cid, "add_node", {"label": "P", "name": "B"}, "c2")
    await _propose(runtime, cid, "add_node", {"label": "P", "name": "C"}, "c3")
    service = ProposalService(runtime)

    await service.reject(ALICE, cid, [first["proposal_id"]])
    assert len(await service.queue(ALICE, cid)) == 2
    assert len(await service.reject(ALICE, cid)) == 2

    assert await service.queue(ALICE, cid) == []
    assert (await service.approve(ALICE, cid)).applied == []
    assert await _graph(db_sessions) == ([], [])


async def test_an_applied_batch_is_audited_with_who_proposed_and_who_approved(
    runtime: ServerToolRuntime, db_sessions: async_sessionmaker[AsyncSession], cid: str
) -> None:
    await _propose(runtime, cid, "add_node", {"label": "Person", "name": "Ada"}, "c1")

    batch = await ProposalService(runtime).approve(ALICE, cid)

    async with db_sessions() as s:
        audit = await s.get(AuditRow, batch.audit_id)
    assert audit is not None
    assert audit.action == "proposals.apply"
    assert audit.actor_id == "alice"
    assert audit.details is not None
    assert audit.details["approved_by"] == "alice"
    assert audit.details["proposed_by"] == {
        "conversation_id": cid,
        "models": ["scripted"],
        "runs": ["run_1"],
    }
    assert audit.details["changes"][0]["result"]["name"] == "Ada"


async def test_approving_twice_applies_once(
    runtime: ServerToolRuntime, db_sessions: async_sessionmaker[AsyncSession], cid: str
) -> None:
    await _propose(runtime, cid, "add_node", {"label": "Person", "name": "Ada"}, "c1")
    service = ProposalService(runtime)

    await service.approve(ALICE, cid)
    again = await service.approve(ALICE, cid)

    assert again.applied == []
    assert await _graph(db_sessions) == (["Ada"], [])


async def test_another_users_queue_is_not_found(
    runtime: ServerToolRuntime, db_sessions: async_sessionmaker[AsyncSession], cid: str
) -> None:
    await _propose(runtime, cid, "add_node", {"label": "Person", "name": "Ada"}, "c1")
    service = ProposalService(runtime)

    for attempt in (service.queue, service.approve, service.reject):
        with pytest.raises(NotFound):
            await attempt(MALLORY, cid)
    assert len(await service.queue(ALICE, cid)) == 1


async def test_concurrent_approvals_apply_the_queue_once(
    runtime: ServerToolRuntime, db_sessions: async_sessionmaker[AsyncSession], cid: str
) -> None:
    await _propose(runtime, cid, "add_node", {"label": "Person", "name": "Ada"}, "c1")
    await _propose(runtime, cid, "add_node", {"label": "Person", "name": "Charles"}, "c2")
    service = ProposalService(runtime)

    results = await asyncio.gather(
        *(service.approve(ALICE, cid) for _ in range(4)), return_exceptions=True
    )

    applied = [r for r in results if not isinstance(r, BaseException) and r.applied]
    assert len(applied) == 1
    assert all(isinstance(r, Conflict) for r in results if isinstance(r, BaseException)), results
    assert sorted((await _graph(db_sessions))[0]) == ["Ada", "Charles"]
