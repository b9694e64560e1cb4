"""JSON text carried inside a value, which the request body's depth cap does not see: a tool
call's `arguments` (a string) and a tool's output. Sent over real HTTP through the official
openai SDK, on SQLite and Postgres.

Arguments or an output nested a few hundred levels deep, or a thousand, or holding an
integer of more digits than Python converts, were a 500 (a recursion error, an encoder's
refusal past 255 levels, Python's digit limit), a background response that was never
stored, or a Responses stream that sent its head and then nothing, for ever. Now such
arguments are what any arguments that are not valid JSON are (an `error` tool card saying
why; the tool never runs) and such an output stays the text it was: the turn goes on.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from openai import AsyncOpenAI

from app.providers.scripted import ScriptedToolCall, ScriptedTurn
from tests.api.runs.helpers import CONVERSATIONS, play
from tests.fakes.db import ApiClient
from tests.support.loopback import served

TEXTS = {
    "300-levels": '{"a":' * 300 + "1" + "}" * 300,
    "5000-levels": "[" * 5000 + "]" * 5000,
    "5000-digits": '{"n": 1' + "0" * 5000 + "}",
}


@pytest.fixture
async def sdk(api: ApiClient) -> AsyncIterator[AsyncOpenAI]:
    play(api, *[ScriptedTurn(text="done")] * 4)
    async with (
        served(api.app) as url,
        AsyncOpenAI(base_url=f"{url}/v1", api_key="k", max_retries=0, timeout=60) as client,
    ):
        yield client


def _items(arguments: str, output: str) -> list[Any]:
    return [
        {"role": "user", "content": "hi"},
        {"type": "function_call", "call_id": "call_1", "name": "lookup", "arguments": arguments},
        {"type": "function_call_output", "call_id": "call_1", "output": output},
    ]


@pytest.mark.parametrize("text", TEXTS.values(), ids=TEXTS.keys())
async def test_chat_completions_history_with_such_arguments_or_output_is_answered(
    sdk: AsyncOpenAI, text: str
) -> None:
    for arguments, output in ((text, "ok"), ("{}", text)):
        answer = await sdk.chat.completions.create(
            model="scripted",
            messages=[
                {"role": "user", "content": "hi"},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": "lookup", "arguments": arguments},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": "call_1", "content": output},
            ],
        )
        assert answer.choices[0].message.content == "done"


@pytest.mark.parametrize("text", TEXTS.values(), ids=TEXTS.keys())
async def test_a_response_over_such_arguments_or_output_completes(
    sdk: AsyncOpenAI, text: str
) -> None:
    for arguments, output in ((text, "ok"), ("{}", text)):
        answer = await sdk.responses.create(model="scripted", input=_items(arguments, output))
        assert (answer.status, answer.output_text) == ("completed", "done")


async def test_a_streamed_response_over_such_arguments_ends(sdk: AsyncOpenAI) -> None:
    # A guard, not a measure: the broken stream sent heartbeats and nothing else, for ever.
    async with (
        asyncio.timeout(120),
        sdk.responses.stream(model="scripted", input=_items(TEXTS["300-levels"], "ok")) as stream,
    ):
        types = [event.type async for event in stream]

    assert types[-1] == "response.completed"


async def test_a_background_response_over_such_arguments_is_stored_and_runs(
    sdk: AsyncOpenAI, api: ApiClient
) -> None:
    started = await sdk.responses.create(
        model="scripted", input=_items(TEXTS["300-levels"], "ok"), background=True
    )
    assert started.conversation is not None

    stored = await api.get(f"{CONVERSATIONS}/{started.conversation.id}")
    assert stored.status_code == 200, stored.text
    messages = stored.json()["messages"]
    [card] = [
        p
        for m in messages
        if isinstance(m["content"], list)
        for p in m["content"]
        if p["type"] == "tool"
    ]
    assert card["data"]["toolCallId"] == "call_1" and "args" not in card["data"]
    assert "nests deeper than 100 levels" in card["data"]["bodyContent"]


async def test_a_model_sending_such_arguments_gets_an_error_card_and_the_run_goes_on(
    api: ApiClient,
) -> None:
    play(
        api,
        ScriptedTurn(tool_calls=[ScriptedToolCall(name="find_nodes", args=TEXTS["300-levels"])]),
        ScriptedTurn(text="sorry"),
    )
    async with (
        served(api.app) as url,
        AsyncOpenAI(base_url=f"{url}/v1", api_key="k", max_retries=0) as client,
    ):
        answer = await client.chat.completions.create(
            model="scripted", messages=[{"role": "user", "content": "find"}]
        )

    assert answer.choices[0].message.content == "sorry"
    [call] = json.loads(answer.model_dump_json())["choices"][0]["message"]["server_tool_calls"]
    assert call["status"] == "error"
