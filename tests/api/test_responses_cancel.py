"""`POST /v1/responses/{id}/cancel` through the official openai SDK, in process, on
SQLite and Postgres: cancelling a conversation's response mid-stream stops its run (the
stream ends `cancelled`, the conversation takes its next turn at once); a response that
already ended is returned unchanged; unknown, stateless and other users' responses are
404 `response_not_found`."""

from __future__ import annotations

import asyncio
from typing import Any

import openai
import pytest

from tests.api.stalling_model import use_stalling_model
from tests.fakes.db import ApiClient


@pytest.fixture(autouse=True)
def _script(users_api: ApiClient) -> None:
    use_stalling_model(users_api)


async def _stalled(
    users_api: ApiClient, client: openai.AsyncOpenAI
) -> tuple[asyncio.Task[list[Any]], str]:
    """A streamed conversation turn whose run stalls, read in a task (the in-process
    transport hands the body over once the stream ends), and its response id."""
    conversation = await client.conversations.create()

    async def read() -> list[Any]:
        stream = await client.responses.create(
            model="scripted", input="stall please", conversation=conversation.id, stream=True
        )
        return [e async for e in stream]

    reading = asyncio.create_task(read())
    url = f"/api/conversations/{conversation.id}"
    headers = {"Authorization": f"Bearer {client.api_key}"}
    while not (run_id := (await users_api.get(url, headers=headers)).json()["active_run_id"]):
        await asyncio.sleep(0.01)
    return reading, "resp_" + run_id.removeprefix("run_")


async def test_cancel_mid_stream_stops_the_run_and_frees_the_conversation(
    users_api: ApiClient, me: openai.AsyncOpenAI
) -> None:
    reading, response_id = await _stalled(users_api, me)

    cancelled = await me.responses.cancel(response_id)
    events = await reading

    assert (cancelled.id, cancelled.status) == (response_id, "cancelled")
    assert events[0].type == "response.created"
    assert (events[-1].response.id, events[-1].response.status) == (response_id, "cancelled")
    assert (await me.responses.retrieve(response_id)).status == "cancelled"
    assert cancelled.conversation is not None
    after = await me.responses.create(
        model="scripted", input="hello again", conversation=cancelled.conversation.id
    )
    assert (after.status, after.output_text) == ("completed", "Hello from chat-bff.")


async def test_cancelling_a_completed_response_returns_it_unchanged(
    me: openai.AsyncOpenAI,
) -> None:
    conversation = await me.conversations.create()
    done = await me.responses.create(model="scripted", input="hello", conversation=conversation.id)

    again = await me.responses.cancel(done.id)

    assert (again.id, again.status, again.output_text) == (
        done.id,
        "completed",
        "Hello from chat-bff.",
    )
    assert [i.model_dump() for i in again.output] == [i.model_dump() for i in done.output]


async def test_another_users_unknown_or_stateless_response_is_404_and_keeps_running(
    users_api: ApiClient, me: openai.AsyncOpenAI, other: openai.AsyncOpenAI
) -> None:
    reading, mine = await _stalled(users_api, me)
    stateless = await me.responses.create(model="scripted", input="hello")

    unknown = ["resp_0123456789abcdef0123456789abcdef", "not-a-response-id"]
    refused = [(other, mine), (me, stateless.id)] + [(me, u) for u in unknown]
    for client, response_id in refused:
        with pytest.raises(openai.NotFoundError) as caught:
            await client.responses.cancel(response_id)
        error: Any = caught.value.body  # OpenAI's shape: {"error": {message, type, code}}
        assert (error["code"], error["type"]) == ("response_not_found", "not_found_error")

    # Another user's cancel did not stop my run; mine does.
    assert (await me.responses.retrieve(mine)).status == "in_progress"
    assert (await me.responses.cancel(mine)).status == "cancelled"
    assert (await reading)[-1].response.status == "cancelled"
