"""What a finished conversation run keeps in memory for the readers that come late."""

from __future__ import annotations

import pytest

from app.providers.scripted import ScriptedTurn
from app.runs import finished as finished_module
from tests.api.runs.helpers import create, finished, play, send
from tests.fakes.db import ApiClient


async def test_a_finished_run_keeps_its_events_as_json_only(client: ApiClient) -> None:
    play(client, ScriptedTurn(text="Several words stream one by one."))
    started = await send(client, await create(client))
    await finished(client, started)

    run = client.services.runs.manager.local(started["run_id"])

    assert run is not None and run.log.closed
    kept = run.log.since(0)
    assert len(kept) > 3
    assert not [item.seq for item in kept if item.parsed]


async def test_a_late_reader_of_the_kept_log_gets_the_live_bytes(client: ApiClient) -> None:
    play(client, ScriptedTurn(text="Several words stream one by one."))
    started = await send(client, await create(client))
    live = await client.get(started["events_url"])

    late = await client.get(started["events_url"])
    resumed = await client.get(started["events_url"], headers={"Last-Event-ID": "2"})

    assert late.content == live.content
    head, rest = resumed.content.split(b"\n", 1)  # `retry:` opens every response
    assert rest.startswith(b"id: 3\n")
    assert live.content.startswith(head) and live.content.endswith(rest)


async def test_a_run_too_long_to_keep_is_read_back_from_the_database_as_streamed(
    client: ApiClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(finished_module, "FINISHED_LOG_BYTES", 1000)
    play(client, ScriptedTurn(text=" ".join(["word"] * 40)))
    started = await send(client, await create(client))
    live = await client.get(started["events_url"])

    late = await client.get(started["events_url"])

    assert client.services.runs.manager.local(started["run_id"]) is None
    assert late.content == live.content
