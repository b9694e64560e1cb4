"""When usage rows are written: a stateless call nobody's budget reads is queued and
written in a batch (off the request path), yet shows in the caller's usage at once and is
never lost by a graceful stop; a call a budget reads, and every conversation run, is
stored before its end is visible."""

from __future__ import annotations

from typing import Any

from app.providers.scripted import ScriptedTurn
from app.settings import Settings
from tests.api.runs.helpers import create, finished, send
from tests.api.test_usage import ALICE, chat, my_usage, play, priced_settings
from tests.fakes.db import ApiClient, MakeApi

# Long enough that nothing is written by the clock while a test runs: what is stored
# is what the batching writer was made to write, or what never went through it.
NEVER = 60.0


def queued_settings(app_settings: Settings, **extra: Any) -> Settings:
    return priced_settings(app_settings, usage_write_interval_seconds=NEVER, **extra)


async def stored_calls(api: ApiClient, user_id: str) -> int:
    """Rows in the database, read past the service (no flush)."""
    async with api.services.db.read() as tx:
        rows = await tx.usage.by_day_and_model(user_id, "2000-01-01", "2999-01-01")
    return sum(row.calls for row in rows)


async def test_queued_usage_is_written_when_the_service_stops_gracefully(
    make_api: MakeApi, app_settings: Settings
) -> None:
    settings = queued_settings(app_settings)
    async with make_api(settings) as api:
        play(api, *(ScriptedTurn(text=f"answer {n}") for n in range(5)))
        for n in range(5):
            await chat(api, f"question {n}", ALICE)
        queued = await stored_calls(api, "alice")
    async with make_api(settings) as restarted:
        [day] = (await my_usage(restarted, ALICE))["days"]
    assert queued == 0  # nothing written on the request path
    assert day["calls"] == 5


async def test_a_usage_report_shows_a_call_whose_row_is_still_queued(
    make_api: MakeApi, app_settings: Settings
) -> None:
    async with make_api(queued_settings(app_settings)) as api:
        play(api, ScriptedTurn(text="Hello there"))
        answer = await chat(api, "Hi", ALICE)
        [day] = (await my_usage(api, ALICE))["days"]
    assert day["calls"] == 1
    assert day["output_tokens"] == answer["run_usage"]["output_tokens"]


async def test_a_call_a_budget_reads_is_stored_before_its_answer(
    make_api: MakeApi, app_settings: Settings
) -> None:
    settings = queued_settings(app_settings, budget_tokens_per_day=1_000_000)
    async with make_api(settings) as api:
        play(api, ScriptedTurn(text="Hello there"))
        await chat(api, "Hi", ALICE)
        assert await stored_calls(api, "alice") == 1


async def test_a_conversation_run_stores_its_usage_with_its_end(
    make_api: MakeApi, app_settings: Settings
) -> None:
    async with make_api(queued_settings(app_settings)) as api:
        play(api, ScriptedTurn(text="one"))
        api.headers.update(ALICE)
        cid = await create(api)
        frames = await finished(api, await send(api, cid, "first"))
        assert frames[-1].event == "run_end"
        assert await stored_calls(api, "alice") == 1
