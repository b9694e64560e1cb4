"""`POST /v1/responses` through the official openai SDK, in process (httpx2 ASGITransport).

Every streamed event is also validated strictly against the SDK's own pydantic models
(`ResponseStreamEvent`), not only constructed leniently as the SDK does by default.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, cast

import httpx2
import openai
import pytest
from openai.types.responses import Response, ResponseStreamEvent
from pydantic import TypeAdapter

from app.providers.scripted import (
    Script,
    ScriptedError,
    ScriptedProvider,
    ScriptedToolCall,
    ScriptedTurn,
)
from app.settings import Settings
from tests.fakes.db import ApiClient, MakeApi

EVENTS: TypeAdapter[ResponseStreamEvent] = TypeAdapter(ResponseStreamEvent)
WEATHER: Any = {
    "type": "function",
    "name": "get_weather",
    "description": "Weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
}

SdkFactory = Callable[..., AbstractAsyncContextManager[tuple[openai.AsyncOpenAI, ScriptedProvider]]]


@pytest.fixture
def sdk(make_api: MakeApi, app_settings: Settings) -> SdkFactory:
    @asynccontextmanager
    async def start(
        *turns: ScriptedTurn, example_tools: bool = False
    ) -> AsyncIterator[tuple[openai.AsyncOpenAI, ScriptedProvider]]:
        provider = ScriptedProvider(Script(mode="sequence", turns=list(turns)), delay_ms=0)
        settings = app_settings.model_copy(
            update={"default_model": "scripted", "example_tools_enabled": example_tools}
        )
        async with make_api(settings, providers={"scripted": provider}) as api:
            http = httpx2.AsyncClient(
                transport=httpx2.ASGITransport(app=api.app), base_url="http://test"
            )
            client = openai.AsyncOpenAI(
                api_key="unused", base_url="http://test/v1", http_client=http, max_retries=0
            )
            async with client:
                yield client, provider

    return start


async def _events(client: openai.AsyncOpenAI, **kwargs: Any) -> list[Any]:
    stream = await client.responses.create(stream=True, **kwargs)
    events = [event async for event in stream]
    for event in events:  # strict: every field the SDK declares, with its exact type
        EVENTS.validate_python(event.model_dump(mode="json", exclude_unset=True))
    return events


async def test_a_plain_answer_is_a_response_object(sdk: SdkFactory) -> None:
    async with sdk(ScriptedTurn(text="Hello there.")) as (client, provider):
        response = await client.responses.create(model="scripted", input="Hi")
    assert isinstance(response, Response)
    assert response.status == "completed"
    assert response.output_text == "Hello there."
    assert response.usage is not None
    Response.model_validate(response.model_dump(mode="json", exclude_unset=True))
    assert provider.requests[0].messages[-1].text() == "Hi"


async def test_instructions_become_the_system_message(sdk: SdkFactory) -> None:
    async with sdk(ScriptedTurn(text="ok")) as (client, provider):
        await client.responses.create(
            model="scripted",
            instructions="Be brief.",
            input=[{"role": "user", "content": [{"type": "input_text", "text": "Hi"}]}],
        )
    sent = provider.requests[0].messages
    assert [(m.role, m.text()) for m in sent] == [("system", "Be brief."), ("user", "Hi")]


async def test_the_stream_is_typed_sequenced_and_ends_completed(sdk: SdkFactory) -> None:
    async with sdk(ScriptedTurn(thinking="Let me think.", text="Hello there.")) as (client, _):
        events = await _events(client, model="scripted", input="Hi")
    types = [e.type for e in events]
    assert types[:2] == ["response.created", "response.in_progress"]
    assert types[-1] == "response.completed"
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert "response.reasoning_text.done" not in types  # AIKit would read it as answer text
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert text == "Hello there."
    final = events[-1].response
    assert [item.type for item in final.output] == ["reasoning", "message"]
    assert final.output_text == "Hello there."
    assert final.output[0].content[0].text == "Let me think."


async def test_stream_and_non_stream_give_the_same_output(sdk: SdkFactory) -> None:
    turn = ScriptedTurn(thinking="Hmm.", text="Same words.")
    async with sdk(turn, turn) as (client, _):
        events = await _events(client, model="scripted", input="Hi")
        whole = await client.responses.create(model="scripted", input="Hi")

    def shape(response: Response) -> list[dict[str, Any]]:
        return [
            {k: v for k, v in item.model_dump(mode="json").items() if k != "id"}
            for item in response.output
        ]

    assert shape(events[-1].response) == shape(whole)


async def test_the_sdk_stream_helper_accumulates_our_events(sdk: SdkFactory) -> None:
    async with (
        sdk(ScriptedTurn(text="Hello there.")) as (client, _),
        client.responses.stream(model="scripted", input="Hi") as stream,
    ):
        async for _event in stream:
            pass
        final = await stream.get_final_response()
    assert final.output_text == "Hello there."


async def test_a_client_tool_round_trip(sdk: SdkFactory) -> None:
    call = ScriptedToolCall(id="call_w1", name="get_weather", args={"city": "Paris"})
    async with sdk(
        ScriptedTurn(text="Checking.", tool_calls=[call]), ScriptedTurn(text="Sunny in Paris.")
    ) as (client, provider):
        events = await _events(client, model="scripted", input="Weather?", tools=[WEATHER])
        first = events[-1].response
        calls = [item for item in first.output if item.type == "function_call"]
        assert first.status == "completed"
        assert [(c.call_id, c.name, json.loads(c.arguments)) for c in calls] == [
            ("call_w1", "get_weather", {"city": "Paris"})
        ]
        streamed = "".join(
            e.delta for e in events if e.type == "response.function_call_arguments.delta"
        )
        assert json.loads(streamed) == {"city": "Paris"}

        second = await client.responses.create(
            model="scripted",
            tools=[WEATHER],
            input=[
                {"role": "user", "content": "Weather?"},
                *[item.model_dump(exclude_none=True) for item in first.output],
                {"type": "function_call_output", "call_id": "call_w1", "output": '{"sky":"sun"}'},
            ],
        )
    assert second.output_text == "Sunny in Paris."
    replayed = provider.requests[1].messages
    part = replayed[-1].tool_parts()[0]
    assert (part.data.status, part.data.result) == ("success", {"sky": "sun"})
    assert provider.requests[1].tools[0].name == "get_weather"


async def test_a_server_tool_is_an_mcp_call_with_its_output(sdk: SdkFactory) -> None:
    call = ScriptedToolCall(id="call_f1", name="find_nodes", args={"query": "x"})
    async with sdk(
        ScriptedTurn(tool_calls=[call]), ScriptedTurn(text="Nothing found."), example_tools=True
    ) as (client, _):
        events = await _events(client, model="scripted", input="Find x")
    final = events[-1].response
    assert [item.type for item in final.output] == ["mcp_call", "message"]
    mcp = final.output[0]
    assert (mcp.id, mcp.name, mcp.status, mcp.server_label) == (
        "call_f1",
        "find_nodes",
        "completed",
        "chat-bff",
    )
    assert json.loads(mcp.output or "null") is not None
    assert "response.mcp_call.completed" in [e.type for e in events]
    assert not any(e.type.startswith("response.function_call") for e in events)


async def test_a_failing_server_tool_is_a_failed_mcp_call(sdk: SdkFactory) -> None:
    call = ScriptedToolCall(id="call_x", name="no_such_tool", args={})
    async with sdk(ScriptedTurn(tool_calls=[call]), ScriptedTurn(text="Sorry.")) as (client, _):
        events = await _events(client, model="scripted", input="Go")
    mcp = events[-1].response.output[0]
    assert (mcp.type, mcp.status) == ("mcp_call", "failed")
    assert "no tool named" in (mcp.output or "")


async def test_the_iteration_cap_ends_incomplete(make_api: MakeApi, app_settings: Settings) -> None:
    call = ScriptedToolCall(id="call_l", name="find_nodes", args={})
    provider = ScriptedProvider(
        Script(mode="sequence", turns=[ScriptedTurn(tool_calls=[call])]), delay_ms=0
    )
    settings = app_settings.model_copy(
        update={"default_model": "scripted", "example_tools_enabled": True, "max_iterations": 1}
    )
    async with make_api(settings, providers={"scripted": provider}) as api:
        body = await _post(api, {"model": "scripted", "input": "loop", "stream": True})
    last = body[-1]
    assert last["type"] == "response.incomplete"
    assert last["response"]["incomplete_details"] == {"reason": "max_output_tokens"}


async def _post(api: ApiClient, payload: dict[str, Any]) -> list[dict[str, Any]]:
    answer = await api.post("/v1/responses", json=payload)
    assert answer.status_code == 200, answer.text
    return [
        json.loads(line.removeprefix("data: "))
        for line in answer.text.splitlines()
        if line.startswith("data: ")
    ]


async def test_a_provider_failure_streams_error_then_response_failed(
    make_api: MakeApi, app_settings: Settings
) -> None:
    provider = ScriptedProvider(
        Script(
            mode="sequence", turns=[ScriptedTurn(error=ScriptedError(status=503, message="down"))]
        ),
        delay_ms=0,
    )
    settings = app_settings.model_copy(update={"default_model": "scripted"})
    async with make_api(settings, providers={"scripted": provider}) as api:
        events = await _post(api, {"model": "scripted", "input": "Hi", "stream": True})
    error, failed = events[-2:]
    assert (error["type"], failed["type"]) == ("error", "response.failed")
    # OpenAI's fields, and `error` with our message: what AIKit shows.
    assert error["message"] == error["error"]["message"] == "down"
    assert error["code"] == error["error"]["code"]
    assert failed["response"]["status"] == "failed"
    assert failed["response"]["error"]["message"] == "down"


async def test_the_sdk_raises_our_message_on_an_error_event(sdk: SdkFactory) -> None:
    async with sdk(ScriptedTurn(error=ScriptedError(status=503, message="down"))) as (client, _):
        stream = await client.responses.create(model="scripted", input="Hi", stream=True)
        with pytest.raises(openai.APIError, match="down"):
            async for _ in stream:
                pass


async def test_a_provider_failure_without_streaming_is_an_openai_error(sdk: SdkFactory) -> None:
    async with sdk(ScriptedTurn(error=ScriptedError(status=400, message="refused"))) as (client, _):
        with pytest.raises(openai.APIStatusError) as caught:
            await client.responses.create(model="scripted", input="Hi")
    assert caught.value.status_code >= 400


async def test_replaying_our_output_as_input_keeps_the_server_tool_history(
    sdk: SdkFactory,
) -> None:
    call = ScriptedToolCall(id="call_f1", name="find_nodes", args={"query": "x"})
    async with sdk(
        ScriptedTurn(tool_calls=[call]),
        ScriptedTurn(text="Nothing found."),
        ScriptedTurn(text="Still nothing."),
        example_tools=True,
    ) as (client, provider):
        first = await client.responses.create(model="scripted", input="Find x")
        await client.responses.create(
            model="scripted",
            input=cast(
                Any,
                [
                    {"role": "user", "content": "Find x"},
                    *[item.model_dump(exclude_none=True) for item in first.output],
                    {"role": "user", "content": "Again?"},
                ],
            ),
        )
    _, assistant, _ = provider.requests[2].messages
    [part] = assistant.tool_parts()
    assert (part.id, part.data.toolName, part.data.status) == ("call_f1", "find_nodes", "success")
    assert assistant.text() == "Nothing found."


async def test_smuggled_fields_are_refused(sdk: SdkFactory) -> None:
    async with sdk() as (client, _):
        with pytest.raises(openai.BadRequestError) as caught:
            await client.responses.create(
                model="scripted", input="Hi", extra_body={"api_key": "sk-other"}
            )
    assert "api_key" in caught.value.message


async def test_previous_response_id_is_refused_in_openai_shape(sdk: SdkFactory) -> None:
    async with sdk() as (client, _):
        with pytest.raises(openai.BadRequestError) as caught:
            await client.responses.create(
                model="scripted", input="Hi", previous_response_id="resp_123"
            )
    assert caught.value.param == "previous_response_id"


async def test_an_unknown_model_is_404(sdk: SdkFactory) -> None:
    async with sdk() as (client, _):
        with pytest.raises(openai.NotFoundError):
            await client.responses.create(model="gpt-nope", input="Hi")


async def test_a_hosted_tool_type_is_a_clear_400(sdk: SdkFactory) -> None:
    async with sdk() as (client, _):
        with pytest.raises(openai.BadRequestError) as caught:
            await client.responses.create(
                model="scripted", input="Hi", tools=[{"type": "web_search"}]
            )
    assert caught.value.param == "tools[0]"
