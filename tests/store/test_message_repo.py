"""MessageRepo: positions, counters, the automatic title, upsert, supersede."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest
from sqlalchemy import insert
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.domain.errors import Conflict, InvalidRequest, NotFound
from app.domain.messages import MESSAGE_SCHEMA_VERSION, Message
from app.domain.parts import text_part, tool_part
from app.store.message_codec import encode_content
from app.store.repos import ConversationRepo, MessageRepo
from app.store.repos.message_values import auto_title
from app.store.tables.core import MessageRow

Sessions = async_sessionmaker[AsyncSession]


@pytest.fixture
async def conversation_id(db_sessions: Sessions) -> str:
    async with db_sessions.begin() as s:
        return (await ConversationRepo(s).create("alice")).id


async def _append(sessions: Sessions, conversation_id: str, *messages: Message) -> None:
    async with sessions.begin() as s:
        for message in messages:
            await MessageRepo(s).append("alice", conversation_id, message)


async def test_history_returns_messages_in_order_with_typed_parts(
    db_sessions: Sessions, conversation_id: str
) -> None:
    question = Message(role="user", content="What's the weather?")
    answer = Message(
        role="assistant",
        content=[
            text_part("Checking."),
            tool_part(tool_call_id="call_1", tool_name="weather", status="success", result=1),
        ],
        metadata={"model": "scripted"},
    )
    await _append(db_sessions, conversation_id, question, answer)
    async with db_sessions() as s:
        history = await MessageRepo(s).history("alice", conversation_id)

    assert history == [question, answer]


async def test_append_counts_and_previews(db_sessions: Sessions, conversation_id: str) -> None:
    await _append(
        db_sessions,
        conversation_id,
        Message(role="user", content="Hello"),
        Message(role="assistant", content="Hi there"),
    )
    async with db_sessions() as s:
        conversation = await ConversationRepo(s).get("alice", conversation_id)

    assert conversation.message_count == 2
    assert conversation.last_message_preview == "Hi there"


async def test_first_user_message_sets_the_title(
    db_sessions: Sessions, conversation_id: str
) -> None:
    await _append(
        db_sessions,
        conversation_id,
        Message(role="user", content="Plan a trip"),
        Message(role="user", content="Something else"),
    )
    async with db_sessions() as s:
        conversation = await ConversationRepo(s).get("alice", conversation_id)

    assert conversation.title == "Plan a trip"
    assert not conversation.title_set_by_user


async def test_a_title_the_user_set_is_kept(db_sessions: Sessions) -> None:
    async with db_sessions.begin() as s:
        conversation_id = (await ConversationRepo(s).create("alice", title="Mine")).id
    await _append(db_sessions, conversation_id, Message(role="user", content="Plan a trip"))
    async with db_sessions() as s:
        assert (await ConversationRepo(s).get("alice", conversation_id)).title == "Mine"


def test_auto_title_cuts_at_a_word_boundary_within_60_characters() -> None:
    text = "Please help me write a detailed travel itinerary for two weeks in Japan"
    title = auto_title(text)

    assert title == "Please help me write a detailed travel itinerary for two"
    assert title is not None
    assert len(title) <= 60


def test_auto_title_cuts_a_single_long_word_hard() -> None:
    assert auto_title("x" * 100) == "x" * 60


async def test_appending_to_a_foreign_conversation_is_not_found(
    db_sessions: Sessions, conversation_id: str
) -> None:
    async with db_sessions.begin() as s:
        with pytest.raises(NotFound):
            await MessageRepo(s).append(
                "mallory", conversation_id, Message(role="user", content="hi")
            )


async def test_history_of_a_foreign_conversation_is_not_found(
    db_sessions: Sessions, conversation_id: str
) -> None:
    async with db_sessions() as s:
        with pytest.raises(NotFound):
            await MessageRepo(s).history("mallory", conversation_id)


async def test_upsert_replaces_content_in_place(
    db_sessions: Sessions, conversation_id: str
) -> None:
    partial = Message(role="assistant", content="Hal", metadata={"status": "incomplete"})
    async with db_sessions.begin() as s:
        repo = MessageRepo(s)
        await repo.append("alice", conversation_id, Message(role="user", content="Hi"))
        await repo.upsert("alice", conversation_id, partial, run_id="run_1")
        await repo.upsert("alice", conversation_id, partial.model_copy(update={"content": "Hello"}))
    async with db_sessions() as s:
        history = await MessageRepo(s).history("alice", conversation_id)
        conversation = await ConversationRepo(s).get("alice", conversation_id)

    assert [m.text() for m in history] == ["Hi", "Hello"]
    assert conversation.message_count == 2
    assert conversation.last_message_preview == "Hello"


async def test_an_upsert_expecting_a_new_message_still_replaces_one_already_stored(
    db_sessions: Sessions, conversation_id: str
) -> None:
    question = Message(role="user", content="Hi")
    partial = Message(role="assistant", content="Hal", metadata={"status": "incomplete"})
    later = Message(role="user", content="Still there?")
    await _append(db_sessions, conversation_id, question, partial, later)
    async with db_sessions.begin() as s:
        done = partial.model_copy(update={"content": "Hello", "metadata": None})
        await MessageRepo(s).upsert("alice", conversation_id, done, expect_new=True)
    async with db_sessions() as s:
        history = await MessageRepo(s).history("alice", conversation_id)
        conversation = await ConversationRepo(s).get("alice", conversation_id)

    assert [m.text() for m in history] == ["Hi", "Hello", "Still there?"]
    assert conversation.message_count == 3
    assert conversation.last_message_preview == "Still there?"  # the latest, not the replaced


async def test_supersede_hides_the_message_and_everything_after(
    db_sessions: Sessions, conversation_id: str
) -> None:
    first = Message(role="user", content="one")
    second = Message(role="assistant", content="two")
    third = Message(role="user", content="three")
    await _append(db_sessions, conversation_id, first, second, third)
    async with db_sessions.begin() as s:
        gone = await MessageRepo(s).supersede("alice", conversation_id, second.id)
    async with db_sessions() as s:
        repo = MessageRepo(s)
        history = await repo.history("alice", conversation_id)
        kept = await repo.records("alice", conversation_id, include_superseded=True)
        conversation = await ConversationRepo(s).get("alice", conversation_id)

    assert gone == [second, third]
    assert history == [first]
    assert [r.message.id for r in kept] == [first.id, second.id, third.id]
    assert (conversation.message_count, conversation.last_message_preview) == (1, "one")


async def test_a_new_version_goes_after_the_superseded_ones(
    db_sessions: Sessions, conversation_id: str
) -> None:
    question = Message(role="user", content="one")
    await _append(db_sessions, conversation_id, question, Message(role="assistant", content="a"))
    retry = Message(role="assistant", content="b")
    async with db_sessions.begin() as s:
        repo = MessageRepo(s)
        await repo.supersede(
            "alice",
            conversation_id,
            (await repo.history("alice", conversation_id))[1].id,
            superseded_by=retry.id,
        )
        await repo.append("alice", conversation_id, retry)
    async with db_sessions() as s:
        history = await MessageRepo(s).history("alice", conversation_id)

    assert [m.text() for m in history] == ["one", "b"]


async def test_appending_an_id_twice_is_a_conflict(
    db_sessions: Sessions, conversation_id: str
) -> None:
    message = Message(role="user", content="hi")
    await _append(db_sessions, conversation_id, message)
    async with db_sessions.begin() as s:
        with pytest.raises(Conflict):
            await MessageRepo(s).append("alice", conversation_id, message)


async def test_an_overlong_message_id_is_refused(
    db_sessions: Sessions, conversation_id: str
) -> None:
    async with db_sessions.begin() as s:
        with pytest.raises(InvalidRequest):
            await MessageRepo(s).append(
                "alice", conversation_id, Message(id="m" * 129, role="user", content="hi")
            )


async def test_the_same_message_id_may_live_in_two_conversations(
    db_sessions: Sessions, conversation_id: str
) -> None:
    async with db_sessions.begin() as s:
        other = (await ConversationRepo(s).create("bob")).id
    message = Message(id="msg_client_1", role="user", content="hi")
    await _append(db_sessions, conversation_id, message)
    async with db_sessions.begin() as s:
        await MessageRepo(s).append("bob", other, message)
        assert await MessageRepo(s).history("bob", other) == [message]


async def test_concurrent_appends_each_get_their_own_position(
    db_sessions: Sessions, conversation_id: str
) -> None:
    messages = [Message(role="user", content=f"m{i}") for i in range(6)]

    async def append(message: Message) -> None:
        async with db_sessions.begin() as s:
            await MessageRepo(s).append("alice", conversation_id, message)

    await asyncio.gather(*(append(m) for m in messages))
    async with db_sessions() as s:
        records = await MessageRepo(s).records("alice", conversation_id)
        conversation = await ConversationRepo(s).get("alice", conversation_id)

    assert sorted(r.position for r in records) == list(range(6))
    assert conversation.message_count == 6


async def test_an_id_appended_twice_at_once_is_stored_once_and_the_other_is_refused(
    db_sessions: Sessions, conversation_id: str
) -> None:
    message = Message(role="user", content="hi")

    async def again() -> None:
        async with db_sessions.begin() as s:
            await MessageRepo(s).append("alice", conversation_id, message)

    async with db_sessions() as s:
        await MessageRepo(s).append("alice", conversation_id, message)  # holds the row lock
        second = asyncio.create_task(again())
        await asyncio.sleep(0.2)  # the second append waits for the first to end
        await s.commit()
    with pytest.raises(Conflict):
        await second
    await _append(db_sessions, conversation_id, Message(role="assistant", content="hello"))
    async with db_sessions() as s:
        records = await MessageRepo(s).records("alice", conversation_id)
        conversation = await ConversationRepo(s).get("alice", conversation_id)

    assert [(r.position, r.message.role) for r in records] == [(0, "user"), (1, "assistant")]
    assert records[0].message == message
    assert conversation.message_count == 2


async def test_an_append_by_a_release_without_the_position_counter_is_numbered_past(
    db_sessions: Sessions, conversation_id: str
) -> None:
    """An instance of an earlier release, still running during a rolling upgrade, appends
    by MAX(position) and leaves the conversation's counter where it was."""
    await _append(db_sessions, conversation_id, Message(role="user", content="one"))
    async with db_sessions.begin() as s:
        await s.execute(
            insert(MessageRow).values(
                conversation_id=conversation_id,
                id="msg_from_the_old_release",
                owner_id="alice",
                position=1,
                role="assistant",
                content=encode_content(Message(role="assistant", content="two")),
                schema_version=MESSAGE_SCHEMA_VERSION,
                metadata={},
                created_at=datetime.now(UTC),
            )
        )
    await _append(db_sessions, conversation_id, Message(role="user", content="three"))
    await _append(db_sessions, conversation_id, Message(role="assistant", content="four"))
    async with db_sessions() as s:
        records = await MessageRepo(s).records("alice", conversation_id)

    assert [r.position for r in records] == [0, 1, 2, 3]
    assert [r.message.text() for r in records] == ["one", "two", "three", "four"]
