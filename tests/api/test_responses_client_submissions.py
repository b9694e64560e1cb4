"""`client_tool_items: "submission_request"` on `POST /v1/responses`, through the official
openai SDK (`extra_body`), in process, on SQLite and Postgres: a client tool call the
client must answer is one `mcp_submission_request` item (what AIKit shows as
`waitingSubmission`), never `function_call` events; a `function_call_output` with its id
continues the turn; a stored response retrieved shows the same item."""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest

from app.providers.scripted import Script, ScriptedProvider, ScriptedToolCall, ScriptedTurn
from tests.api.test_responses_compat import WEATHER
from tests.fakes.db import ApiClient

SUBMISSIONS = {"client_tool_items": "submission_request"}
SCRIPT = Script(
    mode="rules",
    turns=[
        ScriptedTurn(
            match="^weather",
            text="Let me check.",
            tool_calls=[ScriptedToolCall(id="call_w", name="get_weather", args={"city": "Paris"})],
        ),
        ScriptedTurn(after_tool="get_weather", text="Sunny in Paris."),
        ScriptedTurn(
            match="^plan",
            tool_calls=[ScriptedToolCall(id="call_day", name="pick_day", args={})],
        ),
        ScriptedTurn(
            after_tool="pick_day",
            tool_calls=[ScriptedToolCall(id="call_hour", name="pick_hour", args={})],
        ),
        ScriptedTurn(after_tool="pick_hour", text="Booked."),
    ],
)


@pytest.fixture(autouse=True)
def _script(users_api: ApiClient) -> None:
    users_api.services.providers["scripted"] = ScriptedProvider(SCRIPT, delay_ms=0)


def _item(event: Any) -> dict[str, Any]:
    item: dict[str, Any] = event.item.model_dump(mode="json", exclude_none=True)
    return item


async def test_a_client_call_is_one_submission_request_answered_by_its_output(
    me: openai.AsyncOpenAI,
) -> None:
    stream = await me.responses.create(
        model="scripted",
        input="weather in Paris",
        tools=[WEATHER],
        stream=True,
        extra_body=SUBMISSIONS,
    )
    events: list[Any] = [e async for e in stream]

    kinds = [e.type for e in events]
    assert not [k for k in kinds if k.startswith("response.function_call")]
    added = [_item(e) for e in events if e.type == "response.output_item.added"]
    assert [i["type"] for i in added] == ["message", "mcp_submission_request"]
    request = added[1]
    assert (request["id"], request["name"], request["server_label"]) == (
        "call_w",
        "get_weather",
        "client",
    )
    assert json.loads(request["arguments"]) == {"city": "Paris"}
    final = events[-1].response
    assert final.status == "completed"
    output = [i.model_dump(mode="json", exclude_none=True) for i in final.output]
    assert [i["type"] for i in output] == ["message", "mcp_submission_request"]
    assert output[1] == _item(
        next(e for e in events if e.type == "response.output_item.done" and e.item.id == "call_w")
    )

    # The client sends its history back with the tool's result for that call id.
    answered = await me.responses.create(
        model="scripted",
        tools=[WEATHER],
        extra_body=SUBMISSIONS,
        input=[
            {"role": "user", "content": "weather in Paris"},
            *output,
            {"type": "function_call_output", "call_id": "call_w", "output": '{"sky":"sun"}'},
        ],
    )
    assert answered.status == "completed"
    assert answered.output_text == "Sunny in Paris."


async def test_without_the_opt_in_the_call_stays_a_function_call(
    me: openai.AsyncOpenAI,
) -> None:
    done = await me.responses.create(model="scripted", input="weather in Paris", tools=[WEATHER])
    assert [i.type for i in done.output] == ["message", "function_call"]


async def test_a_stored_response_shows_the_same_submission_request(
    me: openai.AsyncOpenAI,
) -> None:
    conversation = await me.conversations.create()
    stream = await me.responses.create(
        model="scripted",
        input="weather in Paris",
        tools=[WEATHER],
        conversation=conversation.id,
        stream=True,
        extra_body=SUBMISSIONS,
    )
    live: list[Any] = [e async for e in stream]
    final = live[-1].response

    got = await me.responses.retrieve(final.id)

    assert [i.model_dump() for i in got.output] == [i.model_dump() for i in final.output]
    assert [i.type for i in got.output] == ["message", "mcp_submission_request"]
    replayed = await me.responses.retrieve(final.id, stream=True)
    again: list[Any] = [e async for e in replayed]
    items = [_item(e) for e in again if e.type == "response.output_item.added"]
    assert [i["type"] for i in items] == ["message", "mcp_submission_request"]


async def test_a_continued_turn_keeps_showing_client_calls_as_submission_requests(
    users_api: ApiClient, me: openai.AsyncOpenAI
) -> None:
    """The result posted natively (`tool-results`): the run that continues the turn asks
    for the next client call in the same shape, live and retrieved."""
    tools: Any = [
        {"type": "function", "name": name, "parameters": {"type": "object"}}
        for name in ("pick_day", "pick_hour")
    ]
    conversation = await me.conversations.create()
    first = await me.responses.create(
        model="scripted",
        input="plan a meeting",
        tools=tools,
        conversation=conversation.id,
        extra_body=SUBMISSIONS,
    )
    assert [(i.type, i.id) for i in first.output] == [("mcp_submission_request", "call_day")]

    headers = {"Authorization": f"Bearer {me.api_key}"}
    answered = await users_api.post(
        f"/api/conversations/{conversation.id}/tool-results",
        json={"results": [{"toolCallId": "call_day", "status": "success", "result": "Monday"}]},
        headers=headers,
    )
    assert answered.status_code == 200, answered.text
    await users_api.get(answered.json()["events_url"], headers=headers)  # to the run's end
    continued = await me.responses.retrieve("resp_" + answered.json()["run_id"][4:])

    assert continued.status == "completed"
    assert [(i.type, i.id) for i in continued.output] == [("mcp_submission_request", "call_hour")]
