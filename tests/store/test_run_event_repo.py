"""RunRepo and EventRepo: run lifecycle and the replayable event log."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.domain.errors import NotFound
from app.domain.events import RunEnd, RunStart, SequencedEvent, TextDeltaEvent, UsageInfo
from app.store.repos import ConversationRepo, EventRepo, RunRepo, record_audit
from app.store.tables.core import AuditRow, RunEventRow

Sessions = async_sessionmaker[AsyncSession]


@pytest.fixture
async def run_id(db_sessions: Sessions) -> str:
    async with db_sessions.begin() as s:
        conversation = await ConversationRepo(s).create("alice")
        await RunRepo(s).create("alice", conversation.id, "run_1", "scripted", "msg_1")
    return "run_1"


def _events(run_id: str, count: int) -> list[SequencedEvent]:
    first = SequencedEvent(seq=1, event=RunStart(run_id=run_id, model="m", message_id="msg_1"))
    deltas = [
        SequencedEvent(seq=i, event=TextDeltaEvent(run_id=run_id, message_id="msg_1", delta=str(i)))
        for i in range(2, count + 1)
    ]
    return [first, *deltas]


async def test_events_after_a_sequence_number_come_back_in_order(
    db_sessions: Sessions, run_id: str
) -> None:
    events = _events(run_id, 6)
    async with db_sessions.begin() as s:
        await EventRepo(s).append_many(run_id, events[:3])
        await EventRepo(s).append_many(run_id, events[3:])
    async with db_sessions() as s:
        repo = EventRepo(s)
        tail = await repo.after(run_id, 2)
        last = await repo.last_seq(run_id)

    assert tail == events[2:]
    assert last == 6


async def test_last_seq_of_a_run_without_events_is_zero(db_sessions: Sessions, run_id: str) -> None:
    async with db_sessions() as s:
        assert await EventRepo(s).last_seq(run_id) == 0


async def test_a_foreign_run_is_not_found(db_sessions: Sessions, run_id: str) -> None:
    async with db_sessions() as s:
        with pytest.raises(NotFound):
            await RunRepo(s).get("mallory", run_id)


async def test_a_run_of_another_conversation_is_not_found(
    db_sessions: Sessions, run_id: str
) -> None:
    async with db_sessions() as s:
        with pytest.raises(NotFound):
            await RunRepo(s).get("alice", run_id, conversation_id="conv_other")


async def test_finish_records_the_final_state(db_sessions: Sessions, run_id: str) -> None:
    usage = UsageInfo(input_tokens=3, output_tokens=4, model_calls=1).model_dump()
    async with db_sessions.begin() as s:
        await RunRepo(s).finish(run_id, "completed", usage=usage, last_seq=9)
    async with db_sessions() as s:
        run = await RunRepo(s).get("alice", run_id)

    assert (run.status, run.usage, run.last_seq) == ("completed", usage, 9)
    assert run.ended_at is not None


async def test_list_unfinished_returns_only_running_runs(
    db_sessions: Sessions, run_id: str
) -> None:
    async with db_sessions.begin() as s:
        repo = RunRepo(s)
        await repo.create("alice", None, "run_2", "scripted", None)
        await repo.finish("run_2", "completed")
        unfinished = await repo.list_unfinished()

    assert [r.id for r in unfinished] == [run_id]


async def test_the_run_end_event_survives_storage(db_sessions: Sessions, run_id: str) -> None:
    end = SequencedEvent(seq=1, event=RunEnd(run_id=run_id, status="failed", error={"code": "x"}))
    async with db_sessions.begin() as s:
        await EventRepo(s).append_many(run_id, [end])
    async with db_sessions() as s:
        assert await EventRepo(s).after(run_id, 0) == [end]


async def test_audit_details_never_keep_secret_looking_values(db_sessions: Sessions) -> None:
    async with db_sessions.begin() as s:
        await record_audit(
            s,
            actor_id="alice",
            action="apikey.create",
            target_type="api_key",
            target_id="key_1",
            details={"name": "ci", "api_key": "sk-live-123", "nested": {"token": "t"}},
        )
    async with db_sessions() as s:
        row = await s.scalar(select(AuditRow))

    assert row is not None
    assert row.details == {"name": "ci", "api_key": "[redacted]", "nested": {"token": "[redacted]"}}


async def test_a_batch_is_stored_at_its_time_like_any_other_timestamp(
    db_sessions: Sessions, run_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    at = datetime(2026, 5, 4, 3, 2, 1, 123456, tzinfo=UTC)
    monkeypatch.setattr("app.store.repos.events.utcnow", lambda: at)
    async with db_sessions.begin() as s:
        await EventRepo(s).append_many(run_id, _events(run_id, 3))
    async with db_sessions() as s:
        # Compared in SQL with a bound timestamp: the stored form must be the column's own.
        same_time = select(func.count()).where(RunEventRow.created_at == at)
        found = await s.scalar(same_time)
        stored = await s.scalars(select(RunEventRow.created_at))

    assert found == 1  # the batch is one row
    assert set(stored) == {at}


async def test_a_batch_is_one_row_and_reads_back_from_any_seq_inside_it(
    db_sessions: Sessions, run_id: str
) -> None:
    events = _events(run_id, 9)
    events[4] = SequencedEvent(
        seq=5, event=TextDeltaEvent(run_id=run_id, message_id="msg_1", delta='Grüße "x"\n🙂 ')
    )
    async with db_sessions.begin() as s:
        await EventRepo(s).append_many(run_id, events[:4])
        await EventRepo(s).append_many(run_id, events[4:])
    async with db_sessions() as s:
        repo = EventRepo(s)
        rows = await s.scalar(select(func.count()).select_from(RunEventRow))
        tails = {after: await repo.after(run_id, after) for after in range(10)}
        pages = [await repo.after(run_id, after, limit=3) for after in (0, 3, 4, 6, 8)]
        last = await repo.last_seq(run_id)

    assert rows == 2
    assert last == 9
    for after, tail in tails.items():
        assert [e.seq for e in tail] == list(range(after + 1, 10))
        assert [e.json() for e in tail] == [e.json() for e in events[after:]]
        assert tail == events[after:]
    assert [[e.seq for e in page] for page in pages] == [
        [1, 2, 3],
        [4, 5, 6],
        [5, 6, 7],
        [7, 8, 9],
        [9],
    ]


async def test_pages_of_a_long_run_cover_it_exactly_once(
    db_sessions: Sessions, run_id: str
) -> None:
    events = _events(run_id, 50)
    async with db_sessions.begin() as s:
        for start in range(0, 50, 5):
            await EventRepo(s).append_many(run_id, events[start : start + 5])
    async with db_sessions() as s:
        repo = EventRepo(s)
        for after in range(51):
            for limit in (1, 4, 7, 64):
                page = await repo.after(run_id, after, limit=limit)
                assert page == events[after : after + limit], (after, limit)
