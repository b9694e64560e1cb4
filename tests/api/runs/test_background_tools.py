"""Long-running tools: the turn ends with the call `loading`, the job runs outside any
request, and its result continues the conversation in a new run."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest

from app.providers.scripted import Script, ScriptedProvider, ScriptedToolCall, ScriptedTurn
from app.settings import Settings
from app.store.repos.feed import FeedRepo
from tests.api.runs.helpers import conversation, create, finished, play, send, text_of, tools_of
from tests.fakes.db import ApiClient, MakeApi
from tests.support.lost_database import lose_connection_in

BACKUP = ["app.examples.ops.backup"]


@asynccontextmanager
async def scripted_api(
    make_api: MakeApi, app_settings: Settings, modules: list[str]
) -> AsyncIterator[ApiClient]:
    """A service loading `modules` whose model plays what the test scripts (`play`)."""
    settings = app_settings.model_copy(update={"tool_modules": modules})
    async with make_api(
        settings, providers={"scripted": ScriptedProvider(Script(mode="sequence", turns=[]))}
    ) as api:
        yield api


@pytest.fixture
async def client(make_api: MakeApi, app_settings: Settings) -> AsyncIterator[ApiClient]:
    async with scripted_api(make_api, app_settings, BACKUP) as api:
        yield api


def export(seconds: float, call_id: str = "c1") -> ScriptedTurn:
    args = {"database": "main", "seconds": seconds}
    return ScriptedTurn(
        tool_calls=[ScriptedToolCall(name="export_database", args=args, id=call_id)]
    )


async def eventually(check: Callable[[], Awaitable[Any]], timeout: float = 10) -> Any:
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        value = await check()
        if value:
            return value
        assert asyncio.get_running_loop().time() < deadline, "the condition never held"
        await asyncio.sleep(0.05)


async def answered(client: ApiClient, cid: str, count: int = 2) -> dict[str, Any] | None:
    """The conversation once `count` assistant messages are stored and no run holds it."""
    detail = await conversation(client, cid)
    assistants = [m for m in detail["messages"] if m["role"] == "assistant"]
    if detail["active_run_id"] is None and len(assistants) >= count:
        return detail
    return None


async def test_the_turn_ends_with_the_call_loading_and_says_it_awaits_a_background_result(
    client: ApiClient,
) -> None:
    play(client, export(0.3), ScriptedTurn(text="The export is ready."))
    cid = await create(client)

    frames = await finished(client, await send(client, cid, "Back up the main database"))

    update = next(f for f in frames if f.event == "part_update")
    assert update.data["cause"] == "background_started"
    part = update.data["part"]
    assert part["data"]["status"] == "loading"
    job_id = part["data"]["backgroundJobId"]
    end = next(f for f in frames if f.event == "message_end").data["message"]
    assert end["metadata"]["finish_reason"] == "awaiting_background"
    assert end["metadata"]["background_jobs"] == [job_id]
    assert frames[-1].data["status"] == "requires_action"
    stored = (await conversation(client, cid))["messages"][-1]
    assert tools_of(stored)[0]["data"]["status"] == "loading"
    job = (await client.get(f"/api/background-jobs/{job_id}")).json()
    assert job["status"] in ("running", "succeeded")


async def test_a_result_that_meets_the_database_out_of_reach_still_continues_the_conversation(
    client: ApiClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    play(client, export(0.5), ScriptedTurn(text="The export is ready."))
    cid = await create(client)
    first = await send(client, cid, "Back up the main database")
    assert (await finished(client, first))[-1].data["status"] == "requires_action"

    # The first write of the result (in the new run's claim) meets the database gone.
    lose_connection_in(monkeypatch, FeedRepo, "record_parts", times=1)

    # Tried again, not written without a run: the model still answers the result.
    detail = await eventually(lambda: answered(client, cid))
    call, answer = [m for m in detail["messages"] if m["role"] == "assistant"]
    assert tools_of(call)[0]["data"]["status"] == "success"
    assert text_of(answer) == "The export is ready."


async def test_the_result_continues_the_conversation_in_a_new_run(client: ApiClient) -> None:
    play(client, export(0.2), ScriptedTurn(text="The export is ready."))
    cid = await create(client)
    first = await send(client, cid, "Back up the main database")
    await finished(client, first)

    detail = await eventually(lambda: answered(client, cid))

    call, answer = [m for m in detail["messages"] if m["role"] == "assistant"]
    tool = tools_of(call)[0]
    assert tool["data"]["status"] == "success"
    assert tool["data"]["result"]["archive"].startswith("s3://backups/main/")
    assert text_of(answer) == "The export is ready."
    run_id = answer["metadata"]["run_id"]
    assert run_id != first["run_id"]
    frames = await finished(
        client, {"events_url": f"/api/conversations/{cid}/runs/{run_id}/events"}
    )
    update = next(f for f in frames if f.event == "part_update")
    assert update.data["cause"] == "background_finished"
    assert update.data["part"]["data"]["status"] == "success"
    assert frames[-1].data["status"] == "completed"
    jobs = (await client.get("/api/background-jobs")).json()["data"]
    assert [(j["status"], j["tool_name"]) for j in jobs] == [("succeeded", "export_database")]
