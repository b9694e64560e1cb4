"""A run's start (`RunJournal.begin`): the claim, the user message, the run's row and its
entry in the conversation's feed, all in one transaction (on Postgres in one statement)."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from app.domain.errors import Conflict
from app.domain.messages import Message
from app.runs.journal import RunJournal
from app.store.database import Database
from app.store.repos.feed import PartEntry


@pytest.fixture
def db(db_engine: AsyncEngine) -> Database:
    return Database(db_engine)


async def _conversation(db: Database) -> str:
    async with db.write() as tx:
        return (await tx.conversations.create("alice")).id


async def _begin(db: Database, conversation_id: str, run_id: str, text: str) -> None:
    await RunJournal(db, instance_id="here").begin(
        owner_id="alice",
        conversation_id=conversation_id,
        run_id=run_id,
        model_id="scripted",
        assistant_message_id=f"msg_{run_id}",
        user_message=Message(id=f"msg_q_{run_id}", role="user", content=text),
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
