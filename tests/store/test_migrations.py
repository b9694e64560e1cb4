"""Alembic migrations of the core: empty -> head -> base on both databases, and the models
match. (The example graph's own branch: `test_example_migrations.py`.)"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest
from sqlalchemy import JSON, column, insert, table, text
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.ext.asyncio import AsyncEngine

from app.domain.events import TextDeltaEvent
from app.domain.messages import Message
from app.examples.graph.tables import GraphBase
from app.store.database import Database
from app.store.db import create_engine
from app.store.migrate import (
    current_revisions,
    downgrade_database,
    head_revisions,
    target_metadata,
    upgrade_database,
)
from tests.fakes.db import WITH_EXAMPLE
from tests.store.schema import CORE_TABLES, differences, tables


@pytest.fixture
async def empty_engine(database_url: str) -> AsyncIterator[AsyncEngine]:
    engine = create_engine(database_url)
    yield engine
    await engine.dispose()


async def test_upgrade_takes_an_empty_database_to_the_cores_head(
    empty_engine: AsyncEngine,
) -> None:
    await upgrade_database(empty_engine)

    assert await current_revisions(empty_engine) == head_revisions() == ("0019_conversation_kind",)
    assert await tables(empty_engine) == CORE_TABLES


async def test_upgrade_twice_is_a_no_op(empty_engine: AsyncEngine) -> None:
    await upgrade_database(empty_engine)
    await upgrade_database(empty_engine)

    assert await current_revisions(empty_engine) == head_revisions()


async def test_downgrade_to_base_leaves_only_the_version_table(
    empty_engine: AsyncEngine,
) -> None:
    await upgrade_database(empty_engine, WITH_EXAMPLE)
    await downgrade_database(empty_engine, WITH_EXAMPLE)

    assert await current_revisions(empty_engine) == ()
    assert await tables(empty_engine) == set()


async def test_the_core_models_match_the_core_migrations(empty_engine: AsyncEngine) -> None:
    await upgrade_database(empty_engine)

    assert await differences(empty_engine, target_metadata()) == []


async def test_the_migrated_test_database_matches_the_core_and_example_models(
    db_engine: AsyncEngine,
) -> None:
    assert await differences(db_engine, target_metadata(), GraphBase.metadata) == []


@pytest.mark.postgres
async def test_concurrent_starts_on_postgres_migrate_once(postgres_url: str) -> None:
    engines = [create_engine(postgres_url) for _ in range(4)]
    try:
        await asyncio.gather(*(upgrade_database(e, WITH_EXAMPLE) for e in engines))
        assert await current_revisions(engines[0]) == head_revisions(WITH_EXAMPLE)
    finally:
        for engine in engines:
            await engine.dispose()


async def test_events_stored_as_json_before_0007_read_back_after_it_and_after_its_downgrade(
    empty_engine: AsyncEngine,
) -> None:
    await upgrade_database(empty_engine, revision="0006_usage")
    delta = {"run_id": "run_1", "type": "text_delta", "message_id": "msg_1", "delta": 'Grüße "x"\n'}
    async with empty_engine.begin() as conn:
        await conn.execute(
            text(
                "INSERT INTO runs (id, owner_id, status, model, created_at, last_seq) "
                "VALUES ('run_1', 'alice', 'completed', 'm', :at, 1)"
            ),
            {"at": datetime.now(UTC)},
        )
        await conn.execute(
            insert(
                table(
                    "run_events",
                    column("run_id"),
                    column("seq"),
                    column("type"),
                    column("data", JSON().with_variant(JSONB(), "postgresql")),
                    column("created_at"),
                )
            ),
            {
                "run_id": "run_1",
                "seq": 1,
                "type": "text_delta",
                "data": delta,
                "created_at": datetime.now(UTC),
            },
        )

    await upgrade_database(empty_engine)
    async with Database(empty_engine).read() as tx:
        [stored] = await tx.events.after("run_1")
    assert stored.type == "text_delta"
    assert json.loads(stored.json()) == delta
    assert stored.event == TextDeltaEvent(run_id="run_1", message_id="msg_1", delta=delta["delta"])

    await downgrade_database(empty_engine, revision="0006_usage")
    async with empty_engine.connect() as conn:
        data = (await conn.execute(text("SELECT data FROM run_events"))).scalar_one()
    assert (json.loads(data) if isinstance(data, str) else data) == delta


async def test_conversations_before_0012_number_their_next_message_after_the_last_one(
    empty_engine: AsyncEngine,
) -> None:
    await upgrade_database(empty_engine, revision="0011_background_jobs")
    now = datetime.now(UTC)
    async with empty_engine.begin() as conn:
        for cid in ("conv_1", "conv_empty"):
            await conn.execute(
                text(
                    "INSERT INTO conversations (id, owner_id, scope, metadata, created_at, "
                    "updated_at, message_count) VALUES (:id, 'alice', '{}', '{}', :at, :at, 0)"
                ),
                {"id": cid, "at": now},
            )
        # Positions 0-2, the last one superseded (an edit keeps the old version's position).
        for position, superseded in ((0, None), (1, None), (2, now)):
            await conn.execute(
                text(
                    "INSERT INTO messages (conversation_id, id, owner_id, position, role, "
                    "content, schema_version, created_at, superseded_at) VALUES ('conv_1', "
                    ":id, 'alice', :position, 'user', '\"hi\"', 1, :at, :superseded)"
                ),
                {
                    "id": f"msg_{position}",
                    "position": position,
                    "at": now,
                    "superseded": superseded,
                },
            )

    await upgrade_database(empty_engine)
    async with Database(empty_engine).write() as tx:
        added = await tx.messages.append("alice", "conv_1", Message(role="user", content="Next"))
        first = await tx.messages.append("alice", "conv_empty", Message(role="user", content="1"))
    assert (added.position, first.position) == (3, 0)

    await downgrade_database(empty_engine, revision="0011_background_jobs")
    async with empty_engine.connect() as conn:
        positions = (
            await conn.execute(
                text("SELECT position FROM messages ORDER BY conversation_id, position")
            )
        ).scalars()
        columns = (await conn.execute(text("SELECT * FROM conversations"))).keys()
    assert list(positions) == [0, 1, 2, 3, 0]
    assert "next_position" not in columns


async def test_events_stored_one_row_each_before_0013_replay_the_same_bytes_after_it(
    empty_engine: AsyncEngine,
) -> None:
    await upgrade_database(empty_engine, revision="0012_conversation_next_position")
    first, second = (
        datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
        datetime(2026, 1, 2, 3, 4, 6, tzinfo=UTC),
    )
    texts = [
        '{"type":"run_start","run_id":"run_1","model":"m","message_id":"msg_1"}',
        '{"type": "text_delta", "run_id": "run_1", "message_id": "msg_1", "delta": "Grüße"}',
        '{\n "type": "text_delta", "run_id": "run_1", "message_id": "msg_1", "delta": "🙂 \\n"}',
        '{"type":"text_delta","run_id":"run_1","message_id":"msg_1","delta":"x"}',
        '{"type":"run_end","run_id":"run_1","status":"completed"}',
    ]
    stamps = [first, first, first, second, second]
    async with empty_engine.begin() as conn:
        for run_id in ("run_1", "run_2"):
            await conn.execute(
                text(
                    "INSERT INTO runs (id, owner_id, status, model, created_at, last_seq) "
                    "VALUES (:id, 'alice', 'completed', 'm', :at, 5)"
                ),
                {"id": run_id, "at": first},
            )
        for run_id in ("run_1", "run_2"):
            for seq, (data, at) in enumerate(zip(texts, stamps, strict=True), start=1):
                await conn.execute(
                    text(
                        "INSERT INTO run_events (run_id, seq, type, data, created_at) "
                        "VALUES (:run_id, :seq, :type, :data, :at)"
                    ),
                    {
                        "run_id": run_id,
                        "seq": seq,
                        "type": json.loads(data)["type"],
                        "data": data,
                        "at": at,
                    },
                )
        before = (
            await conn.execute(
                text(
                    "SELECT run_id, seq, type, data, created_at FROM run_events "
                    "ORDER BY run_id, seq"
                )
            )
        ).all()

    await upgrade_database(empty_engine)
    async with empty_engine.connect() as conn:
        rows = (await conn.execute(text("SELECT run_id, seq FROM run_events"))).all()
    assert sorted(rows) == [("run_1", 3), ("run_1", 5), ("run_2", 3), ("run_2", 5)]
    async with Database(empty_engine).read() as tx:
        for after in range(6):
            replayed = await tx.events.after("run_2", after)
            assert [e.json() for e in replayed] == [t.encode() for t in texts[after:]]
            assert [e.seq for e in replayed] == list(range(after + 1, 6))
        assert [e.type for e in await tx.events.after("run_1")] == [
            json.loads(t)["type"] for t in texts
        ]
        assert await tx.events.last_seq("run_1") == 5

    await downgrade_database(empty_engine, revision="0012_conversation_next_position")
    async with empty_engine.connect() as conn:
        after_downgrade = (
            await conn.execute(
                text(
                    "SELECT run_id, seq, type, data, created_at FROM run_events "
                    "ORDER BY run_id, seq"
                )
            )
        ).all()
    assert after_downgrade == before


async def test_background_response_conversations_before_0019_leave_the_list_after_it(
    empty_engine: AsyncEngine,
) -> None:
    await upgrade_database(empty_engine, revision="0018_idempotency_conversation")
    now = datetime.now(UTC)
    marks = {
        "conv_held": {"background_response": "true"},
        "conv_chat": {"topic": "background_response"},
        "conv_plain": {},
    }
    async with empty_engine.begin() as conn:
        for cid, metadata in marks.items():
            await conn.execute(
                text(
                    "INSERT INTO conversations (id, owner_id, scope, metadata, created_at, "
                    "updated_at, message_count) VALUES (:id, 'alice', '{}', :metadata, :at, "
                    ":at, 0)"
                ),
                {"id": cid, "metadata": json.dumps(metadata), "at": now},
            )

    await upgrade_database(empty_engine)
    async with Database(empty_engine).read() as tx:
        listed = await tx.conversations.list("alice", archived="all")
        held = await tx.conversations.get("alice", "conv_held")
    assert sorted(r.id for r in listed.items) == ["conv_chat", "conv_plain"]
    assert held.metadata == {"background_response": "true"}

    await downgrade_database(empty_engine, revision="0018_idempotency_conversation")
    async with empty_engine.connect() as conn:
        found = await conn.execute(text("SELECT * FROM conversations ORDER BY id"))
        columns, ids = found.keys(), [row.id for row in found]
    assert ids == ["conv_chat", "conv_held", "conv_plain"]
    assert "kind" not in columns
