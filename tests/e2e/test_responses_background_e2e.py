"""Background responses through the official openai SDK against a live process on
loopback, on SQLite and Postgres: `responses.create(background=True)` answers at once
`in_progress` and the run goes on with no client attached; `responses.retrieve` shows it
running, then the whole output; a background stream dropped mid-way resumes with
`retrieve(id, stream=True, starting_after=N)` under the same sequence numbers;
`responses.cancel` ends it `cancelled` (and is harmless once it ended); with
`store=False` it is a 400, and one refused (an unknown model) leaves no conversation
behind. On two instances sharing Postgres and Redis, a response
started on one is retrieved, resumed and cancelled through the other."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from app.providers.scripted import Script, ScriptedTurn
from tests.e2e.conftest import Launch, Service
from tests.limits.conftest import reachable_redis_url

pytestmark = pytest.mark.e2e

LONG = " ".join(f"word{n}" for n in range(120))
SCRIPT = Script(
    mode="rules",
    turns=[
        # About 5 s of text: still running when the create answers and the test reads.
        ScriptedTurn(match="^slow", text=LONG, delay_ms=40),
        # Far longer than any test: only a cancel ends this run before the test does.
        ScriptedTurn(match="^stall", stall_seconds=600.0, text="Never said."),
        ScriptedTurn(match="^hello", text="Hello from chat-bff."),
        ScriptedTurn(after_tool="get_weather", text="Sunny it is, then."),
    ],
)
ENDED = {"completed", "failed", "cancelled", "incomplete"}


def _settings(tmp_path: Path, database_url: str, **extra: str) -> dict[str, str]:
    script = tmp_path / "script.json"
    script.write_text(SCRIPT.model_dump_json())
    return {
        "DATABASE_URL": database_url,
        "DEFAULT_MODEL": "scripted",
        "SCRIPTED_SCRIPT": str(script),
        "SCRIPTED_DELAY_MS": "5",
        "RATE_LIMIT_REQUESTS_PER_MINUTE": "0",
        **extra,
    }


def _client(service: Service) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(api_key="unused", base_url=f"{service.base_url}/v1", max_retries=0)


@pytest.fixture
async def client(
    launch: Launch, tmp_path: Path, database_url: str
) -> AsyncIterator[openai.AsyncOpenAI]:
    sdk = _client(launch(**_settings(tmp_path, database_url)))
    yield sdk
    await sdk.close()


async def _until_ended(client: openai.AsyncOpenAI, response_id: str) -> Any:
    """Poll as an SDK user does, until the response ends."""
    for _ in range(600):
        response = await client.responses.retrieve(response_id)
        if response.status in ENDED:
            return response
        await asyncio.sleep(0.05)
    raise AssertionError(f"{response_id} did not end")


async def test_a_background_response_answers_at_once_and_runs_on_with_no_client(
    client: openai.AsyncOpenAI,
) -> None:
    created = await client.responses.create(
        model="scripted", input="slow answer please", background=True
    )

    assert (created.status, created.background) == ("in_progress", True)
    assert created.output == []
    running = await client.responses.retrieve(created.id)
    assert (running.id, running.status, running.background) == (created.id, "in_progress", True)
    done = await _until_ended(client, created.id)
    assert (done.status, done.output_text, done.background) == ("completed", LONG, True)
    assert done.usage is not None


async def test_a_background_turn_of_a_conversation_answers_at_once_then_completes(
    client: openai.AsyncOpenAI,
) -> None:
    conversation = await client.conversations.create()

    created = await client.responses.create(
        model="scripted", input="slow answer please", conversation=conversation.id, background=True
    )

    assert created.status == "in_progress"
    assert created.conversation is not None and created.conversation.id == conversation.id
    done = await _until_ended(client, created.id)
    assert (done.status, done.output_text) == ("completed", LONG)
    items = await client.conversations.items.list(conversation.id)
    assert [i.type for i in items.data] == ["message", "message"]


async def test_a_dropped_background_stream_resumes_with_the_same_sequence_numbers(
    client: openai.AsyncOpenAI,
) -> None:
    seen: list[Any] = []
    stream = await client.responses.create(
        model="scripted", input="slow answer please", background=True, stream=True
    )
    async for event in stream:
        seen.append(event)
        if len(seen) == 12:
            break
    await stream.close()  # the client drops here; the run does not stop
    response_id = seen[0].response.id
    assert (seen[0].type, seen[0].response.background) == ("response.created", True)

    rest = [
        e
        async for e in await client.responses.retrieve(
            response_id, stream=True, starting_after=seen[-1].sequence_number
        )
    ]

    numbers = [e.sequence_number for e in seen + rest]
    assert numbers == list(range(len(numbers)))
    assert rest[-1].type == "response.completed"
    text = "".join(e.delta for e in seen + rest if e.type == "response.output_text.delta")
    assert text == LONG
    assert (await client.responses.retrieve(response_id)).output_text == LONG


async def test_cancelling_a_background_response_ends_it_cancelled_and_again_changes_nothing(
    client: openai.AsyncOpenAI,
) -> None:
    created = await client.responses.create(model="scripted", input="stall", background=True)

    cancelled = await client.responses.cancel(created.id)
    again = await client.responses.cancel(created.id)

    assert (cancelled.id, cancelled.status) == (created.id, "cancelled")
    assert again.model_dump() == cancelled.model_dump()
    assert (await client.responses.retrieve(created.id)).status == "cancelled"
    finished = await client.responses.create(model="scripted", input="hello", background=True)
    done = await _until_ended(client, finished.id)
    assert (await client.responses.cancel(finished.id)).model_dump() == done.model_dump()


async def test_a_background_response_whose_process_died_ends_failed_not_cancelled(
    launch: Launch, tmp_path: Path, database_url: str
) -> None:
    settings = _settings(tmp_path, database_url)
    first = launch(**settings)
    before = _client(first)
    created = await before.responses.create(model="scripted", input="stall", background=True)
    await before.close()

    first.kill()  # the run dies with its process; the next one closes it at start-up
    client = _client(launch(**settings, RUN_LEASE_SECONDS="1"))
    done = await _until_ended(client, created.id)
    events = [e async for e in await client.responses.retrieve(created.id, stream=True)]
    await client.close()

    assert (done.status, done.incomplete_details) == ("failed", None)
    assert done.error is not None and done.error.code == "server_error"
    assert "stopped" in done.error.message
    last = events[-1]
    assert last.type == "response.failed"
    assert last.response.model_dump() == done.model_dump()


async def test_a_background_response_that_is_not_stored_is_refused(
    client: openai.AsyncOpenAI,
) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        await client.responses.create(model="scripted", input="hello", background=True, store=False)

    error: Any = caught.value.body
    assert (error["param"], error["type"]) == ("store", "invalid_request_error")
    assert "store" in error["message"]


async def test_a_refused_background_response_leaves_no_conversation_behind(
    client: openai.AsyncOpenAI,
) -> None:
    api = str(client.base_url).removesuffix("v1/") + "api/conversations"
    async with httpx.AsyncClient() as http:
        before = (await http.get(api)).json()["data"]
        with pytest.raises(openai.NotFoundError) as caught:
            await client.responses.create(model="no-such-model", input="hello", background=True)
        after = (await http.get(api)).json()["data"]

    error: Any = caught.value.body
    assert error["code"] == "model_not_found"
    assert after == before


async def test_a_background_response_without_a_conversation_adds_none_to_the_sidebar(
    client: openai.AsyncOpenAI,
) -> None:
    api = str(client.base_url).removesuffix("v1/") + "api/conversations"
    async with httpx.AsyncClient() as http:
        created = await client.responses.create(
            model="scripted", input="hello there", background=True
        )
        done = await _until_ended(client, created.id)
        listed = (await http.get(api, params={"archived": "all"})).json()

        assert listed["data"] == []
        assert (done.status, done.output_text) == ("completed", "Hello from chat-bff.")
        assert done.conversation is not None
        held = await client.conversations.retrieve(done.conversation.id)
        assert held.metadata == {"background_response": "true"}
        await client.conversations.delete(held.id)
        with pytest.raises(openai.NotFoundError):
            await client.responses.retrieve(created.id)


async def test_a_background_response_continues_from_the_clients_function_call_output(
    client: openai.AsyncOpenAI,
) -> None:
    weather: Any = {
        "type": "function",
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {}},
    }
    created = await client.responses.create(
        model="scripted",
        tools=[weather],
        background=True,
        input=[
            {"role": "user", "content": "weather in Paris?"},
            {
                "type": "function_call",
                "call_id": "call_1",
                "name": "get_weather",
                "arguments": "{}",
            },
            {"type": "function_call_output", "call_id": "call_1", "output": "sunny"},
        ],
    )

    assert (created.status, created.background) == ("in_progress", True)
    done = await _until_ended(client, created.id)
    assert (done.status, done.output_text) == ("completed", "Sunny it is, then.")
    assert [t.name for t in done.tools if t.type == "function"] == ["get_weather"]


async def test_a_background_response_ending_with_an_assistant_message_names_input(
    client: openai.AsyncOpenAI,
) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        await client.responses.create(
            model="scripted",
            background=True,
            input=[
                {"role": "user", "content": "hello"},
                {"role": "assistant", "content": "Hello from chat-bff."},
            ],
        )

    error: Any = caught.value.body
    assert error["param"] == "input"
    assert "function_call_output" in error["message"]


@pytest.mark.postgres
async def test_a_background_response_started_on_a_is_retrieved_resumed_and_cancelled_on_b(
    launch: Launch, tmp_path: Path, postgres_url: str
) -> None:
    settings = _settings(tmp_path, postgres_url, REDIS_URL=reachable_redis_url())
    on_a, on_b = _client(launch(**settings)), _client(launch(**settings))

    slow = await on_a.responses.create(model="scripted", input="slow answer", background=True)
    stalled = await on_a.responses.create(model="scripted", input="stall", background=True)

    assert (await on_b.responses.retrieve(slow.id)).status == "in_progress"
    events = [e async for e in await on_b.responses.retrieve(slow.id, stream=True)]
    rest = [e async for e in await on_b.responses.retrieve(slow.id, stream=True, starting_after=9)]
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert [e.model_dump() for e in rest] == [e.model_dump() for e in events[10:]]
    assert (await on_b.responses.retrieve(slow.id)).output_text == LONG
    assert (await on_b.responses.cancel(stalled.id)).status == "cancelled"
    assert (await on_a.responses.retrieve(stalled.id)).status == "cancelled"
    await on_a.close()
    await on_b.close()
