"""Pooled Postgres connections that the server ended: the service does not ping every
connection it takes from the pool (that was three round trips a checkout), yet after the
database ended them all (a restart, `pg_terminate_backend`) the very next request works."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import event, text

from app.providers.scripted import ScriptedTurn
from tests.api.runs.helpers import conversation, create, finished, play, send
from tests.fakes.db import ApiClient, end_connections

pytestmark = pytest.mark.parametrize(
    "database_kind", [pytest.param("postgres", marks=pytest.mark.postgres)]
)


async def test_a_turn_after_the_database_ended_every_connection_completes(
    api: ApiClient, migrated_database_url: str
) -> None:
    play(api, ScriptedTurn(text="First answer."), ScriptedTurn(text="Second answer."))
    cid = await create(api)
    await finished(api, await send(api, cid))

    assert await end_connections(migrated_database_url) >= 1

    frames = await finished(api, await send(api, cid, "Still there?"))
    assert frames[-1].data["status"] == "completed"
    texts = [m["content"] for m in (await conversation(api, cid))["messages"]]
    assert texts[-2:] == ["Still there?", [{"type": "text", "data": {"text": "Second answer."}}]]


async def test_a_read_after_the_database_ended_every_connection_answers(
    api: ApiClient, migrated_database_url: str
) -> None:
    cid = await create(api, title="Kept")

    assert await end_connections(migrated_database_url) >= 1

    assert (await conversation(api, cid))["title"] == "Kept"


async def test_connections_a_burst_opened_serve_the_next_burst(
    api: ApiClient, migrated_database_url: str
) -> None:
    engine = api.services.db.engine
    opened: list[object] = []

    def count(*connection: object) -> None:
        opened.append(connection)

    event.listen(engine.sync_engine, "connect", count)
    try:

        async def burst() -> None:
            async def hold() -> None:
                async with engine.connect() as conn:
                    await conn.execute(text("SELECT pg_sleep(0.2)"))

            await asyncio.gather(*(hold() for _ in range(20)))

        await burst()
        first = len(opened)
        await burst()
    finally:
        event.remove(engine.sync_engine, "connect", count)
    assert first >= 10  # the burst needed connections of its own
    assert len(opened) == first  # and they were still there for the next one
