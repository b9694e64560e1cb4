"""A replay sends the bytes the live stream sent: the stored log keeps each event's JSON as
it was streamed, on SQLite and Postgres, read back by a process that never saw the run."""

from __future__ import annotations

import json

import httpx
import pytest

from tests.e2e.conftest import Launch, openai_backed
from tests.fakes.openai_upstream import Completion, FakeOpenAIUpstream

pytestmark = pytest.mark.e2e

# Text a database would be tempted to normalise: escapes, non-ASCII, a would-be frame.
PIECES = ["Grüße ", '"quoted" ', "naïve ☃ ", "tab\tand\nline ", "\\back ", "event: x\n\ndata: y"]


def frames(body: bytes) -> list[bytes]:
    """The run's events on the wire (comments, keep-alives and `retry:` left out)."""
    kept = (
        b"\n".join(line for line in f.split(b"\n") if not line.startswith((b":", b"retry:")))
        for f in body.split(b"\n\n")
    )
    return [f for f in kept if f.startswith(b"id: ")]


async def test_a_stored_run_replays_byte_for_byte_what_was_streamed_live(
    launch: Launch, openai_upstream: FakeOpenAIUpstream, database_url: str
) -> None:
    openai_upstream.enqueue(Completion(text=PIECES))
    settings = openai_backed(openai_upstream.base_url, DATABASE_URL=database_url)
    first = launch(**settings)
    async with httpx.AsyncClient(base_url=first.base_url, timeout=20) as http:
        created = await http.post("/api/conversations", json={"title": "bytes"})
        assert created.status_code == 201, created.text
        cid = created.json()["id"]
        live = await http.post(
            f"/api/conversations/{cid}/messages",
            json={"content": "Say it."},
            headers={"Accept": "text/event-stream"},
        )
        assert live.status_code == 200, live.text
        run_id = json.loads(frames(live.content)[0].split(b"data: ", 1)[1])["run_id"]
    first.stop()

    # A new process has nothing in memory: every byte of the replay comes from the database.
    second = launch(db=first.db, **settings)
    async with httpx.AsyncClient(base_url=second.base_url, timeout=20) as http:
        url = f"/api/conversations/{cid}/runs/{run_id}/events"
        replay = await http.get(url)
        resumed = await http.get(url, headers={"Last-Event-ID": "3"})
    assert replay.status_code == 200, replay.text

    streamed = frames(live.content)
    assert streamed[-1].startswith(b"id: %d\nevent: run_end\n" % len(streamed))
    assert "".join(PIECES).encode() not in live.content  # escaped, never raw on the wire
    assert frames(replay.content) == streamed
    assert frames(resumed.content) == streamed[3:]
