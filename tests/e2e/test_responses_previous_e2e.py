"""`previous_response_id` through the official openai SDK against a live process on
loopback, on SQLite and Postgres: a background response, once ended, is continued by a
streamed request; a response still running is its conversation's active run (409
`run_active`), and once cancelled it is continued like any other."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import openai
import pytest

from app.providers.scripted import Script, ScriptedTurn
from tests.e2e.conftest import Launch

pytestmark = pytest.mark.e2e

SCRIPT = Script(
    mode="rules",
    turns=[
        ScriptedTurn(match="^stall", stall_seconds=600.0, text="Never said."),
        ScriptedTurn(match="^hello", text="Hello from chat-bff."),
        ScriptedTurn(match="^more", text="More from chat-bff."),
    ],
)


@pytest.fixture
async def client(
    launch: Launch, tmp_path: Path, database_url: str
) -> AsyncIterator[openai.AsyncOpenAI]:
    script = tmp_path / "script.json"
    script.write_text(SCRIPT.model_dump_json())
    service = launch(
        DATABASE_URL=database_url,
        DEFAULT_MODEL="scripted",
        SCRIPTED_SCRIPT=str(script),
        SCRIPTED_DELAY_MS="5",
        RATE_LIMIT_REQUESTS_PER_MINUTE="0",
    )
    sdk = openai.AsyncOpenAI(api_key="unused", base_url=f"{service.base_url}/v1", max_retries=0)
    yield sdk
    await sdk.close()


async def _ended(client: openai.AsyncOpenAI, response_id: str) -> Any:
    for _ in range(600):
        response = await client.responses.retrieve(response_id)
        if response.status not in ("queued", "in_progress"):
            return response
        await asyncio.sleep(0.05)
    raise AssertionError(f"{response_id} did not end")


async def test_a_background_response_is_continued_by_a_streamed_one(
    client: openai.AsyncOpenAI,
) -> None:
    started = await client.responses.create(model="scripted", input="hello", background=True)
    first = await _ended(client, started.id)

    stream = await client.responses.create(
        model="scripted", input="more", previous_response_id=first.id, stream=True
    )
    events = [e async for e in stream]

    last = events[-1]
    assert last.type == "response.completed"
    done = last.response
    assert done.output_text == "More from chat-bff."
    assert done.previous_response_id == first.id
    assert done.conversation is not None and done.conversation.id == first.conversation.id
    assert (await client.responses.retrieve(done.id)).output_text == "More from chat-bff."


async def test_a_running_response_is_continued_once_it_is_cancelled(
    client: openai.AsyncOpenAI,
) -> None:
    running = await client.responses.create(model="scripted", input="stall", background=True)

    with pytest.raises(openai.ConflictError) as busy:
        await client.responses.create(
            model="scripted", input="more", previous_response_id=running.id
        )
    cancelled = await client.responses.cancel(running.id)
    after = await client.responses.create(
        model="scripted", input="more", previous_response_id=running.id
    )

    assert busy.value.code == "run_active"
    assert cancelled.status == "cancelled"
    assert (after.status, after.output_text) == ("completed", "More from chat-bff.")
