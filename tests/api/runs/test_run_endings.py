"""Every run ends in a stored final state: time limits, and a database that refuses the end."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from app.providers.scripted import Script, ScriptedProvider, ScriptedToolCall, ScriptedTurn
from app.runs import manager as manager_module
from app.runs.journal import RunJournal
from app.settings import Settings
from tests.api.runs.helpers import (
    CONVERSATIONS,
    conversation,
    create,
    events,
    finished,
    play,
    send,
    text_of,
    tools_of,
)
from tests.fakes.db import ApiClient, MakeApi


async def test_a_run_over_its_time_limit_fails_and_keeps_its_partial_text(
    make_api: MakeApi, app_settings: Settings
) -> None:
    slow = ScriptedProvider(
        Script(mode="sequence", turns=[ScriptedTurn(text="Some words and then more", delay_ms=200)])
    )
    settings = app_settings.model_copy(update={"run_timeout_seconds": 0.5})

    async with make_api(settings, providers={"scripted": slow}) as api:
        cid = await create(api)
        frames = await finished(api, await send(api, cid))
        answer = (await conversation(api, cid))["messages"][-1]

    assert frames[-1].data["status"] == "failed"
    assert frames[-1].data["error"]["code"] == "run_timeout"
    assert [f.event for f in frames if f.event == "error"] == ["error"]
    assert answer["metadata"]["status"] == "incomplete"
    assert answer["content"][0]["data"]["text"] == "".join(
        f.data["delta"] for f in frames if f.event == "text_delta"
    )


def _failing_finish(monkeypatch: pytest.MonkeyPatch, failures: int | None) -> list[int]:
    """Make storing a run's end fail `failures` times (None: always); counts attempts."""
    real = RunJournal.finish
    attempts: list[int] = []

    async def finish(self: RunJournal, **kwargs: Any) -> None:
        attempts.append(1)
        if failures is None or len(attempts) <= failures:
            raise OSError("the database went away")
        await real(self, **kwargs)

    monkeypatch.setattr(RunJournal, "finish", finish)
    monkeypatch.setattr(manager_module, "END_WRITE_RETRIES", (0.0, 0.0, 0.0))
    return attempts


async def test_a_briefly_failing_end_write_is_retried_and_the_answer_stored(
    make_api: MakeApi, app_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    attempts = _failing_finish(monkeypatch, failures=2)
    provider = ScriptedProvider(Script(mode="sequence", turns=[ScriptedTurn(text="Kept.")]))

    async with make_api(app_settings, providers={"scripted": provider}) as api:
        cid = await create(api)
        frames = await finished(api, await send(api, cid))
        detail = await conversation(api, cid)

    assert len(attempts) == 3
    assert frames[-1].data["status"] == "completed"
    assert detail["active_run_id"] is None
    assert detail["messages"][-1]["content"][0]["data"]["text"] == "Kept."


async def test_an_end_the_database_refuses_closes_the_run_as_failed_and_frees_the_conversation(
    make_api: MakeApi, app_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    _failing_finish(monkeypatch, failures=None)
    provider = ScriptedProvider(
        Script(mode="sequence", turns=[ScriptedTurn(text="Lost."), ScriptedTurn(text="Again.")])
    )
    settings = app_settings.model_copy(update={"run_lease_seconds": 0.3})

    async with make_api(settings, providers={"scripted": provider}) as api:
        cid = await create(api)
        frames = await finished(api, await send(api, cid))
        deadline = asyncio.get_running_loop().time() + 5
        while (await conversation(api, cid))["active_run_id"] is not None:
            assert asyncio.get_running_loop().time() < deadline, "the conversation stayed locked"
            await asyncio.sleep(0.05)
        again = await api.post(f"{CONVERSATIONS}/{cid}/messages", json={"content": "Retry"})

    assert frames[-1].data["status"] == "failed"
    assert frames[-1].data["error"]["code"] == "not_stored"
    assert frames[-1].data["error"]["retryable"] is True
    assert again.status_code == 202


async def test_a_model_that_keeps_calling_tools_badly_ends_the_run_failed_with_its_errors(
    api: ApiClient,
) -> None:
    play(
        api,
        ScriptedTurn(tool_calls=[ScriptedToolCall(name="summon_dragons", args={}, id="c1")]),
        ScriptedTurn(tool_calls=[ScriptedToolCall(name="add_node", args='{"label":', id="c2")]),
        ScriptedTurn(text="never reached"),
    )
    cid = await create(api)

    frames = await finished(api, await send(api, cid, "do something"))
    answer = (await conversation(api, cid))["messages"][-1]

    assert frames[-1].event == "run_end"
    assert frames[-1].data["status"] == "failed"
    assert frames[-1].data["error"]["code"] == "malformed_tool_call"
    assert [f.data["part"]["id"] for f in frames if f.event == "tool_error"] == ["c1", "c2"]
    assert "summon_dragons" in frames[[f.event for f in frames].index("tool_error")].data["error"]
    assert [t["data"]["status"] for t in tools_of(answer)] == ["error", "error"]
    assert "never reached" not in text_of(answer)


async def test_a_cancel_landing_while_the_end_is_stored_still_sends_run_end(
    client: ApiClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Stop pressed as the answer ends: the run stays completed and every reader, live or
    late, gets its run_end (the end used to be stored but never sent, so readers hung)."""
    real = RunJournal.finish
    storing, release = asyncio.Event(), asyncio.Event()

    async def finish(self: RunJournal, **kwargs: Any) -> None:
        await real(self, **kwargs)
        storing.set()
        await release.wait()  # the end is in the database; the run has not sent it yet

    monkeypatch.setattr(RunJournal, "finish", finish)
    play(client, ScriptedTurn(text="All done."))
    cid = await create(client)
    started = await send(client, cid)
    live = asyncio.create_task(events(client, started["events_url"]))
    await asyncio.wait_for(storing.wait(), timeout=5)
    run = client.services.runs.manager.local(started["run_id"])
    assert run is not None

    cancel = asyncio.create_task(
        client.post(f"{CONVERSATIONS}/{cid}/runs/{started['run_id']}/cancel")
    )
    while not run.cancel_requested:  # the cancel has reached the run
        await asyncio.sleep(0.001)
    release.set()
    response = await asyncio.wait_for(cancel, timeout=5)

    assert response.json()["status"] == "completed"
    for frames in (
        await asyncio.wait_for(live, timeout=5),
        await asyncio.wait_for(finished(client, started), timeout=5),
    ):
        assert frames[-1].event == "run_end"
        assert frames[-1].data["status"] == "completed"
    assert started["run_id"] not in client.services.runs.manager.held()
    assert (await conversation(client, cid))["active_run_id"] is None
