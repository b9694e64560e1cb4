"""ConversationRepo: ownership, listing with a keyset cursor, updates, purge, run claims."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.domain.errors import InvalidRequest, NotFound
from app.domain.events import RunEnd, SequencedEvent
from app.domain.messages import Message
from app.store.repos import ConversationRepo, EventRepo, MessageRepo, RunRepo
from app.store.tables.core import ConversationRow, MessageRow, RunEventRow, RunRow

Sessions = async_sessionmaker[AsyncSession]


async def _create(sessions: Sessions, owner: str = "alice", **kwargs: object) -> str:
    async with sessions.begin() as s:
        return (await ConversationRepo(s).create(owner, **kwargs)).id  # type: ignore[arg-type]


async def test_create_returns_the_stored_conversation(db_sessions: Sessions) -> None:
    async with db_sessions.begin() as s:
        created = await ConversationRepo(s).create(
            "alice", title="Plans", mode="propose", scope={"workspace_id": "w1"}
        )
    async with db_sessions() as s:
        got = await ConversationRepo(s).get("alice", created.id)

    assert got == created
    assert got.id.startswith("conv_")
    assert got.title_set_by_user
    assert got.mode == "propose"
    assert got.scope == {"workspace_id": "w1"}
    assert got.created_at.tzinfo is not None


async def test_a_foreign_id_is_not_found_like_a_missing_one(db_sessions: Sessions) -> None:
    conversation_id = await _create(db_sessions, "alice")
    async with db_sessions() as s:
        repo = ConversationRepo(s)
        with pytest.raises(NotFound) as foreign:
            await repo.get("mallory", conversation_id)
        with pytest.raises(NotFound) as missing:
            await repo.get("mallory", "conv_missing")

    assert foreign.value.message == missing.value.message


async def test_list_pages_newest_first_with_a_cursor(db_sessions: Sessions) -> None:
    ids = [await _create(db_sessions, title=f"c{i}") for i in range(5)]
    async with db_sessions() as s:
        repo = ConversationRepo(s)
        first = await repo.list("alice", limit=2)
        second = await repo.list("alice", limit=2, cursor=first.next_cursor)
        third = await repo.list("alice", limit=2, cursor=second.next_cursor)

    seen = [c.id for page in (first, second, third) for c in page.items]
    assert seen == list(reversed(ids))
    assert third.next_cursor is None


async def test_list_shows_only_the_owners_conversations(db_sessions: Sessions) -> None:
    mine = await _create(db_sessions, "alice")
    await _create(db_sessions, "bob")
    async with db_sessions() as s:
        page = await ConversationRepo(s).list("alice")

    assert [c.id for c in page.items] == [mine]


async def test_list_filters_by_archived(db_sessions: Sessions) -> None:
    live = await _create(db_sessions)
    archived = await _create(db_sessions)
    async with db_sessions.begin() as s:
        await ConversationRepo(s).archive("alice", archived)
    async with db_sessions() as s:
        repo = ConversationRepo(s)
        default = [c.id for c in (await repo.list("alice")).items]
        only = [c.id for c in (await repo.list("alice", archived="true")).items]
        both = {c.id for c in (await repo.list("alice", archived="all")).items}

    assert (default, only, both) == ([live], [archived], {live, archived})


async def test_list_searches_titles_case_insensitively(db_sessions: Sessions) -> None:
    hit = await _create(db_sessions, title="Trip to Paris")
    await _create(db_sessions, title="Groceries")
    await _create(db_sessions, title="100% done")
    async with db_sessions() as s:
        repo = ConversationRepo(s)
        found = [c.id for c in (await repo.list("alice", q="paris")).items]
        literal = [c.title for c in (await repo.list("alice", q="%")).items]

    assert found == [hit]
    assert literal == ["100% done"]


async def test_a_tampered_cursor_is_an_invalid_request(db_sessions: Sessions) -> None:
    async with db_sessions() as s:
        with pytest.raises(InvalidRequest):
            await ConversationRepo(s).list("alice", cursor="not-a-cursor")


async def test_update_renames_and_restores(db_sessions: Sessions) -> None:
    conversation_id = await _create(db_sessions)
    async with db_sessions.begin() as s:
        repo = ConversationRepo(s)
        await repo.archive("alice", conversation_id)
        updated = await repo.update("alice", conversation_id, title="New", archived=False)

    assert updated.title == "New"
    assert updated.title_set_by_user
    assert not updated.archived


async def test_purge_removes_messages_runs_and_events(db_sessions: Sessions) -> None:
    conversation_id = await _create(db_sessions)
    async with db_sessions.begin() as s:
        await MessageRepo(s).append("alice", conversation_id, Message(role="user", content="hi"))
        await RunRepo(s).create("alice", conversation_id, "run_1", "scripted", "msg_a")
        await EventRepo(s).append_many(
            "run_1", [SequencedEvent(seq=1, event=RunEnd(run_id="run_1", status="completed"))]
        )
    async with db_sessions.begin() as s:
        await ConversationRepo(s).purge("alice", conversation_id)
    async with db_sessions() as s:
        counts = [
            await s.scalar(select(func.count()).select_from(table))
            for table in (MessageRow, RunRow, RunEventRow)
        ]
        with pytest.raises(NotFound):
            await ConversationRepo(s).get("alice", conversation_id)

    assert counts == [0, 0, 0]


async def test_purge_of_a_foreign_conversation_deletes_nothing(db_sessions: Sessions) -> None:
    conversation_id = await _create(db_sessions, "alice")
    async with db_sessions.begin() as s:
        with pytest.raises(NotFound):
            await ConversationRepo(s).purge("mallory", conversation_id)
    async with db_sessions() as s:
        assert (await ConversationRepo(s).get("alice", conversation_id)).id == conversation_id


async def test_claim_active_run_returns_the_run_holding_it(db_sessions: Sessions) -> None:
    conversation_id = await _create(db_sessions)
    async with db_sessions.begin() as s:
        first = await ConversationRepo(s).claim_active_run("alice", conversation_id, "run_1")
    async with db_sessions.begin() as s:
        second = await ConversationRepo(s).claim_active_run("alice", conversation_id, "run_2")

    assert (first, second) == (None, "run_1")


async def test_release_lets_the_next_run_claim(db_sessions: Sessions) -> None:
    conversation_id = await _create(db_sessions)
    async with db_sessions.begin() as s:
        repo = ConversationRepo(s)
        await repo.claim_active_run("alice", conversation_id, "run_1")
        await repo.release_active_run(conversation_id, "run_1")
        claimed = await repo.claim_active_run("alice", conversation_id, "run_2")
        record = await repo.get("alice", conversation_id)

    assert claimed is None
    assert record.active_run_id == "run_2"


async def test_concurrent_claims_have_exactly_one_winner(db_sessions: Sessions) -> None:
    conversation_id = await _create(db_sessions)

    async def claim(run_id: str) -> str | None:
        async with db_sessions.begin() as s:
            return await ConversationRepo(s).claim_active_run("alice", conversation_id, run_id)

    results = await asyncio.gather(*(claim(f"run_{i}") for i in range(5)))

    assert results.count(None) == 1
    winner = f"run_{results.index(None)}"
    assert all(r == winner for r in results if r is not None)


async def test_claim_on_a_foreign_conversation_is_not_found(db_sessions: Sessions) -> None:
    conversation_id = await _create(db_sessions, "alice")
    async with db_sessions.begin() as s:
        with pytest.raises(NotFound):
            await ConversationRepo(s).claim_active_run("mallory", conversation_id, "run_1")


async def test_ensure_creates_a_named_conversation_once_even_when_racing(
    db_sessions: Sessions,
) -> None:
    async def ensure() -> str:
        async with db_sessions.begin() as s:
            return (await ConversationRepo(s).ensure("alice", "conv_named")).id

    made = list(await asyncio.gather(ensure(), ensure(), ensure()))

    assert made == ["conv_named"] * 3
    async with db_sessions() as s:
        rows = await s.scalar(select(func.count()).select_from(ConversationRow))
        got = await ConversationRepo(s).get("alice", "conv_named")
    assert rows == 1
    assert (got.owner_id, got.mode, got.title, got.message_count) == ("alice", "auto", None, 0)


async def test_ensure_never_hands_out_another_owners_conversation(db_sessions: Sessions) -> None:
    async with db_sessions.begin() as s:
        await ConversationRepo(s).ensure("alice", "conv_taken")
    async with db_sessions.begin() as s:
        with pytest.raises(NotFound):
            await ConversationRepo(s).ensure("mallory", "conv_taken")
    async with db_sessions() as s:
        assert (await ConversationRepo(s).get("alice", "conv_taken")).owner_id == "alice"
