"""Pooled Postgres connections that the server ended: the service does not ping every
connection it takes from the pool (that was three round trips a checkout), yet after the
database ended them all (a restart, `pg_terminate_backend`) the very next request works."""

from __future__ import annotations

import pytest

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
