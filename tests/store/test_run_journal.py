"""A run's start and end in the database (`RunJournal`). The start: the claim, the user
message, the run's row and its entry in the conversation's feed, in one transaction (on
Postgres one statement). The end: its answer, its state and its usage rows, likewise."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import delete
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine

from app.domain.errors import Conflict, NotFound
from app.domain.events import RunEnd, SequencedEvent, TextDeltaEvent, UsageInfo
from app.domain.messages import Message
from app.domain.usage import CallUsage
from app.runs.journal import RunJournal
from app.store.database import Database
from app.store.records import ConversationRecord, RunRecord
from app.store.repos.feed import PartEntry
from app.store.repos.usage import UsageTotal, usage_entries
from app.store.tables.core import RunRow


@pytest.fixture
def db(db_engine: AsyncEngine) -> Database:
    return Database(db_engine)


async def _conversation(db: Database) -> str:
    async with db.write() as tx:
        return (await tx.conversations.create("alice")).id


async def _begin(
    db: Database, conversation_id: str, run_id: str, text: str, *, user_message_id: str = ""
) -> list[Message] | None:
    """Starts the run; the history it runs on."""
    return await RunJournal(db, instance_id="here").begin(
        owner_id="alice",
        conversation_id=conversation_id,
        run_id=run_id,
        model_id="scripted",
        assistant_message_id=f"msg_{run_id}",
        user_message=Message(id=user_message_id or f"msg_q_{run_id}", role="user", content=text),
    )


async def test_a_started_run_has_its_row_its_message_and_its_feed_entry(db: Database) -> None:
    cid = await _conversation(db)
    await _begin(db, cid, "run_1", "Hello")

    async with db.read() as tx:
        run = await tx.runs.get("alice", "run_1", cid)
        history = await tx.messages.history("alice", cid)
        feed = await tx.feed.after(cid, 0)
        conversation = await tx.conversations.get("alice", cid)

    assert (run.status, run.model, run.assistant_message_id) == ("running", "scripted", "msg_run_1")
    assert [m.text() for m in history] == ["Hello"]
    assert [(e.seq, e.kind, e.run_id) for e in feed] == [(1, "run", "run_1")]
    assert feed[0].data["message"]["content"] == "Hello"
    assert conversation.active_run_id == "run_1"


async def test_a_run_that_finds_the_conversation_held_writes_nothing(db: Database) -> None:
    cid = await _conversation(db)
    await _begin(db, cid, "run_1", "Hello")

    with pytest.raises(Conflict) as caught:
        await _begin(db, cid, "run_2", "Again")

    assert caught.value.code == "run_active"
    async with db.read() as tx:
        history = await tx.messages.history("alice", cid)
        feed = await tx.feed.after(cid, 0)
        runs = await tx.runs.list_unfinished()
    assert [m.text() for m in history] == ["Hello"]
    assert [e.run_id for e in feed] == ["run_1"]
    assert [r.id for r in runs] == ["run_1"]


async def test_a_run_whose_message_id_is_taken_writes_nothing(db: Database) -> None:
    """On Postgres the start's one statement has written the claim, the run's row and its
    feed entry when it finds the id taken: it undoes itself, as a rollback did."""
    cid = await _conversation(db)
    await _begin(db, cid, "run_1", "Hello")
    async with db.write() as tx:
        assert await tx.conversations.release_active_run(cid, "run_1")

    with pytest.raises(Conflict) as caught:
        await _begin(db, cid, "run_2", "Again", user_message_id="msg_q_run_1")

    assert caught.value.code == "message_id_taken"
    async with db.read() as tx:
        history = await tx.messages.history("alice", cid)
        feed = await tx.feed.after(cid, 0)
        conversation = await tx.conversations.get("alice", cid)
        with pytest.raises(NotFound):
            await tx.runs.get("alice", "run_2", cid)
    assert [m.text() for m in history] == ["Hello"]
    assert [e.run_id for e in feed] == ["run_1"]
    assert conversation.active_run_id is None


async def test_a_run_started_while_a_decision_holds_the_conversation_is_entered_after_it(
    db: Database,
) -> None:
    """The decision's feed entry commits while the claim waits for the conversation (the
    row lock on Postgres, the one connection on SQLite): the run's entry comes after it,
    not on its number."""
    cid = await _conversation(db)
    decided = PartEntry(
        key="approval:apr_1", run_id=None, message_id="msg_x", part={"id": "p"}, cause="approval"
    )
    async with db.unit() as tx:
        assert await tx.conversations.lock("alice", cid)
        await tx.feed.record_parts(cid, [decided])
        starting = asyncio.create_task(_begin(db, cid, "run_1", "Hello"))
        await asyncio.sleep(0.3)  # the run's claim waits for this transaction
        await tx.commit()
    await starting

    async with db.read() as tx:
        feed = await tx.feed.after(cid, 0)
    assert [(e.seq, e.kind) for e in feed] == [(1, "part"), (2, "run")]


async def test_a_run_started_while_an_answer_is_stored_has_it_in_its_history(
    db: Database,
) -> None:
    """The answer commits while the claim waits for the conversation (Postgres: the row
    lock; the claim's statement reads the history from its snapshot, taken before the
    wait): the run's history holds it all the same."""
    cid = await _conversation(db)
    answer = Message(id="msg_answer", role="assistant", content="Earlier")
    async with db.unit() as tx:
        await tx.messages.append("alice", cid, answer)
        starting = asyncio.create_task(_begin(db, cid, "run_1", "Hello"))
        await asyncio.sleep(0.3)  # the run's claim waits for this transaction
        await tx.commit()
    history = await starting

    assert history is not None
    assert [m.text() for m in history] == ["Earlier", "Hello"]


def _last_events(run_id: str) -> list[SequencedEvent]:
    """A run's last batch: what the writer hands the end along with the answer."""
    delta = TextDeltaEvent(run_id=run_id, message_id=f"msg_{run_id}", delta="Hi!")
    end = RunEnd(run_id=run_id, status="completed")
    return [SequencedEvent(seq=2, event=delta), SequencedEvent(seq=3, event=end)]


async def _stored_events(db: Database, run_id: str) -> list[int]:
    async with db.read() as tx:
        return [e.seq for e in await tx.events.after(run_id)]


async def _finish(
    db: Database,
    cid: str,
    run_id: str,
    answer: Message,
    events: list[SequencedEvent] | None = None,
) -> None:
    rows = usage_entries(
        user_id="alice",
        roles=["user"],
        conversation_id=cid,
        run_id=run_id,
        calls=[CallUsage(model="scripted", input_tokens=5, output_tokens=7, cost=0.1)],
    )
    await RunJournal(db, instance_id="here").finish(
        owner_id="alice",
        conversation_id=cid,
        run_id=run_id,
        status="completed",
        message=answer,
        usage=UsageInfo(input_tokens=5, output_tokens=7, model_calls=1),
        error=None,
        last_seq=3,
        events=events,
        usage_rows=rows,
    )


async def _stored(
    db: Database, cid: str, run_id: str
) -> tuple[RunRecord, list[Message], ConversationRecord, list[UsageTotal]]:
    """What a run's end left: the run, the conversation's history, the conversation and
    alice's usage."""
    async with db.read() as tx:
        run = await tx.runs.get("alice", run_id, cid)
        history = await tx.messages.history("alice", cid)
        conversation = await tx.conversations.get("alice", cid)
        spent = await tx.usage.by_day_and_model("alice", "2000-01-01", "2999-01-01")
    return run, history, conversation, spent


async def test_a_run_s_end_stores_its_answer_its_state_and_its_usage(db: Database) -> None:
    cid = await _conversation(db)
    await _begin(db, cid, "run_1", "Hello")
    await _finish(db, cid, "run_1", Message(id="msg_run_1", role="assistant", content="Hi!"))

    run, history, conversation, spent = await _stored(db, cid, "run_1")

    assert (run.status, run.last_seq, run.error) == ("completed", 3, None)
    assert run.usage is not None and run.usage["output_tokens"] == 7
    assert run.ended_at is not None
    assert [m.text() for m in history] == ["Hello", "Hi!"]
    assert (conversation.active_run_id, conversation.message_count) == (None, 2)
    assert [(t.input_tokens, t.output_tokens, t.cost, t.calls) for t in spent] == [(5, 7, 0.1, 1)]


async def test_a_run_whose_answer_is_stored_already_ends_once_with_the_answer_replaced(
    db: Database,
) -> None:
    """An end stored twice (the first commit's answer lost on the way back, say): the
    answer's id is taken, so it is replaced in place; the run's state and usage are
    written once by the second end, nothing counted twice."""
    cid = await _conversation(db)
    await _begin(db, cid, "run_1", "Hello")
    async with db.write() as tx:
        await tx.messages.append(
            "alice", cid, Message(id="msg_run_1", role="assistant", content="Hi")
        )
    await _finish(db, cid, "run_1", Message(id="msg_run_1", role="assistant", content="Hi!"))

    run, history, conversation, spent = await _stored(db, cid, "run_1")

    assert run.status == "completed"
    assert [m.text() for m in history] == ["Hello", "Hi!"]
    assert (conversation.active_run_id, conversation.message_count) == (None, 2)
    assert conversation.last_message_preview == "Hi!"
    assert [t.calls for t in spent] == [1]


async def test_the_end_of_a_run_that_is_gone_is_not_found(db: Database) -> None:
    cid = await _conversation(db)
    await _begin(db, cid, "run_1", "Hello")
    async with db.write() as tx:
        await tx.session.execute(delete(RunRow).where(RunRow.id == "run_1"))

    with pytest.raises(NotFound):
        await _finish(db, cid, "run_1", Message(id="msg_run_1", role="assistant", content="Hi!"))

    async with db.read() as tx:
        history = await tx.messages.history("alice", cid)
        spent = await tx.usage.by_day_and_model("alice", "2000-01-01", "2999-01-01")
    assert [m.text() for m in history] == ["Hello"]  # the transaction was rolled back
    assert spent == []


async def test_a_run_s_end_stores_its_last_events_with_its_answer(db: Database) -> None:
    cid = await _conversation(db)
    await _begin(db, cid, "run_1", "Hello")
    answer = Message(id="msg_run_1", role="assistant", content="Hi!")
    await _finish(db, cid, "run_1", answer, _last_events("run_1"))

    run, history, conversation, spent = await _stored(db, cid, "run_1")

    assert await _stored_events(db, "run_1") == [2, 3]
    assert (run.status, run.last_seq) == ("completed", 3)
    assert [m.text() for m in history] == ["Hello", "Hi!"]
    assert (conversation.active_run_id, conversation.message_count) == (None, 2)
    assert [t.calls for t in spent] == [1]


async def test_an_end_with_events_whose_answer_is_stored_already_stores_them_once(
    db: Database,
) -> None:
    """The answer's id taken: on Postgres the end's one statement undoes itself (its
    batch too) and the end is done again; its events are stored once, not refused as
    stored already."""
    cid = await _conversation(db)
    await _begin(db, cid, "run_1", "Hello")
    async with db.write() as tx:
        await tx.messages.append(
            "alice", cid, Message(id="msg_run_1", role="assistant", content="Hi")
        )
    answer = Message(id="msg_run_1", role="assistant", content="Hi!")
    await _finish(db, cid, "run_1", answer, _last_events("run_1"))

    run, history, conversation, spent = await _stored(db, cid, "run_1")

    assert await _stored_events(db, "run_1") == [2, 3]
    assert run.status == "completed"
    assert [m.text() for m in history] == ["Hello", "Hi!"]
    assert (conversation.active_run_id, conversation.message_count) == (None, 2)
    assert [t.calls for t in spent] == [1]


async def test_the_end_with_events_of_a_run_that_is_gone_stores_none_of_it(
    db: Database,
) -> None:
    """Its events name a run that is not there (a foreign key): refused, and neither the
    answer nor the usage rows stay."""
    cid = await _conversation(db)
    await _begin(db, cid, "run_1", "Hello")
    async with db.write() as tx:
        await tx.session.execute(delete(RunRow).where(RunRow.id == "run_1"))

    answer = Message(id="msg_run_1", role="assistant", content="Hi!")
    with pytest.raises(IntegrityError):
        await _finish(db, cid, "run_1", answer, _last_events("run_1"))

    async with db.read() as tx:
        history = await tx.messages.history("alice", cid)
        spent = await tx.usage.by_day_and_model("alice", "2000-01-01", "2999-01-01")
    assert [m.text() for m in history] == ["Hello"]
    assert spent == []
    assert await _stored_events(db, "run_1") == []
