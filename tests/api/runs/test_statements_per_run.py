"""What a persisted run costs the database: the statements one conversation turn sends,
counted on the app's own engine, on SQLite and Postgres. A change that adds a round trip
per run fails here; lower the bound when one is taken away."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import event, text

from app.providers.scripted import ScriptedTurn
from app.store.observe import OBSERVE
from tests.api.runs.helpers import create, finished, play, send
from tests.fakes.db import ApiClient

# A plain turn of 300 chunks: read the conversation; claim it and store the user message
# (one UPDATE of the conversation does both and hands out the position, then an INSERT;
# on Postgres one statement) and the run, read the history; two event batches; at the
# end the answer (UPDATE that also lets the conversation go and says whether its id is
# taken, INSERT; one statement on Postgres), the run's state and the usage row (in the
# end's transaction); and the run's entry in the conversation's feed (one INSERT that
# numbers itself, so other tabs see the run start). It was 14 on both before the
# conversation's UPDATE gave the position (a SELECT of MAX(position) after each UPDATE),
# 19 before the answer's UPDATE took the release along and the duplicate lookups went,
# 15 before the feed, 16 before the user message's UPDATE took the claim along and the
# answer's lookup went. On Postgres the claim's statement also writes the run's row and
# its feed entry (10 before), and the answer's statement
# writes the run's end and its usage rows (8 before) and the last event batch (6 before),
# and the claim's statement returns the history (5 before).
STATEMENTS_PER_RUN = {"sqlite": 12, "postgresql": 4}
ANSWER = " ".join(f"word{i}" for i in range(300))


@contextmanager
def counting(client: ApiClient) -> Iterator[Counter[str]]:
    """Statements as SQLAlchemy sends them, and those a turn sends on the driver's own
    connection (`app.store.observe`)."""
    seen: Counter[str] = Counter()
    observed: list[Any] = []

    def note(statement: str) -> None:
        seen[" ".join(statement.split())[:150]] += 1

    def count(*args: Any) -> None:
        note(args[2])

    def observe(statement: str, _many: bool) -> None:
        if statement not in ("BEGIN", "COMMIT"):
            note(statement)

    def attach(_dbapi_connection: Any, record: Any, _proxy: Any) -> None:
        record.info[OBSERVE] = observe
        observed.append(record)

    engine = client.services.db.engine.sync_engine
    event.listen(engine, "before_cursor_execute", count)
    event.listen(engine, "checkout", attach)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", count)
        event.remove(engine, "checkout", attach)
        for record in observed:
            record.info.pop(OBSERVE, None)


async def test_a_conversation_turn_stays_within_its_statement_budget(client: ApiClient) -> None:
    play(client, ScriptedTurn(text=ANSWER), ScriptedTurn(text=ANSWER))
    cid = await create(client)
    await finished(client, await send(client, cid))  # the first turn of a conversation

    with counting(client) as seen:
        started = await send(client, cid, "And again?")
        frames = await finished(client, started)

    assert frames[-1].data["status"] == "completed"
    assert sum(1 for f in frames if f.event == "text_delta") > 256  # more than one batch
    # The events route reads the finished run from memory: nothing of this is replay.
    dialect = client.services.db.engine.dialect.name
    assert sum(seen.values()) <= STATEMENTS_PER_RUN[dialect], dict(seen)


async def test_a_conversation_turn_stores_its_events_in_a_row_per_batch(
    client: ApiClient,
) -> None:
    """The ~300 events of a turn are a few rows (one per batch the journal writes), not
    one row each: rows were most of what SQLite did for a persisted run."""
    play(client, ScriptedTurn(text=ANSWER))
    cid = await create(client)
    frames = await finished(client, await send(client, cid))
    run_id = frames[-1].data["run_id"]

    async with client.services.db.engine.connect() as conn:
        rows = await conn.scalar(
            text("SELECT count(*) FROM run_events WHERE run_id = :run_id"), {"run_id": run_id}
        )

    assert len(frames) > 300
    assert rows is not None and rows <= 4
