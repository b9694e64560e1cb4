"""A background response is its owner's alone, and a cancel answers where it ended.
Through the official openai SDK, in process, on SQLite and Postgres.

- another user's retrieve, stream (from the start or `starting_after`) and cancel of a
  running background response are 404 `response_not_found`, word for word what an
  unknown id answers (nothing tells them it exists), and it runs on;
- a cancel that lands while the run is storing its finished answer answers the Response
  as it ended (`completed`, the whole output), the same as every later retrieve, never
  the `in_progress` it was a moment before.
"""

from __future__ import annotations

import asyncio
from typing import Any

import openai
import pytest

from app.runs.active import ActiveRun
from app.runs.driver import Ending
from tests.api.stalling_model import HELLO, use_stalling_model
from tests.fakes.db import ApiClient

UNKNOWN = "resp_0123456789abcdef0123456789abcdef"


@pytest.fixture(autouse=True)
def _script(users_api: ApiClient) -> None:
    use_stalling_model(users_api)


async def _refusal(client: openai.AsyncOpenAI, response_id: str, how: str) -> Any:
    """What `client` is answered for `response_id` asked `how`; it must be a 404."""
    asks: dict[str, Any] = {
        "retrieve": lambda: client.responses.retrieve(response_id),
        "stream": lambda: client.responses.retrieve(response_id, stream=True),
        "resume": lambda: client.responses.retrieve(response_id, stream=True, starting_after=1),
        "cancel": lambda: client.responses.cancel(response_id),
    }
    with pytest.raises(openai.NotFoundError) as caught:
        await asks[how]()
    return caught.value.body


async def test_another_users_background_response_is_404_as_an_unknown_id_and_runs_on(
    me: openai.AsyncOpenAI, other: openai.AsyncOpenAI
) -> None:
    mine = await me.responses.create(model="scripted", input="stall", background=True)

    for how in ("retrieve", "stream", "resume", "cancel"):
        theirs = await _refusal(other, mine.id, how)
        unknown = await _refusal(other, UNKNOWN, how)
        assert theirs["code"] == "response_not_found"
        assert theirs == unknown

    assert (await me.responses.retrieve(mine.id)).status == "in_progress"
    assert (await me.responses.cancel(mine.id)).status == "cancelled"


async def test_a_cancel_landing_as_the_answer_is_stored_answers_it_completed(
    users_api: ApiClient, me: openai.AsyncOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    manager = users_api.services.runs.manager
    storing, stored = asyncio.Event(), asyncio.Event()
    finish = manager._finish

    async def held_finish(run: ActiveRun, ending: Ending) -> None:
        storing.set()  # the model has answered; its end is not stored yet
        await stored.wait()
        await finish(run, ending)

    monkeypatch.setattr(manager, "_finish", held_finish)
    created = await me.responses.create(model="scripted", input="hello", background=True)
    await storing.wait()
    run = manager.local("run_" + created.id.removeprefix("resp_"))
    assert run is not None

    cancelling = asyncio.create_task(me.responses.cancel(created.id))
    while not run.cancel_requested:  # the cancel reached the run
        await asyncio.sleep(0)
    stored.set()
    answered = await cancelling

    assert (answered.status, answered.output_text) == ("completed", HELLO)
    assert answered.model_dump() == (await me.responses.retrieve(created.id)).model_dump()
