"""A `tool_choice` that forces a call of a tool the request does not offer is a 400 naming
`tool_choice`, on every surface that takes one, as OpenAI answers it: it was accepted and
the model answered in plain text (or a provider refused it upstream), so a client forcing
a function got no call and no reason. `auto` and `none` without tools still answer, and a
conversation keeps exactly what it had. On SQLite and Postgres."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import openai
import pytest
from openai import AsyncOpenAI
from openai.types.chat import ChatCompletionMessageParam

from app.settings import Settings
from tests.api.test_openai_compat import sdk_for
from tests.fakes.db import ApiClient, MakeApi

HELLO: list[ChatCompletionMessageParam] = [{"role": "user", "content": "Hi"}]
CHAT_TOOL: Any = [{"type": "function", "function": {"name": "pick_colour", "parameters": {}}}]
RESPONSES_TOOL: Any = [{"type": "function", "name": "pick_colour", "parameters": {}}]
SERVER_TOOL = "get_graph"  # an example tool: offered by the server, not declared by the client


@pytest.fixture
async def api(make_api: MakeApi, app_settings: Settings) -> AsyncIterator[ApiClient]:
    settings = app_settings.model_copy(update={"example_tools_enabled": True})
    async with make_api(settings) as client:
        yield client


@pytest.fixture
async def sdk(api: ApiClient) -> AsyncIterator[AsyncOpenAI]:
    async with sdk_for(api) as client:
        yield client


def refused_naming_tool_choice(caught: pytest.ExceptionInfo[openai.BadRequestError]) -> None:
    assert caught.value.status_code == 400
    body = caught.value.body
    assert isinstance(body, dict)
    assert body["type"] == "invalid_request_error"
    assert body["param"] == "tool_choice"


async def test_chat_completions_refuse_a_function_that_is_not_among_the_tools(
    sdk: AsyncOpenAI,
) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        await sdk.chat.completions.create(
            model="scripted",
            messages=HELLO,
            tools=CHAT_TOOL,
            tool_choice={"type": "function", "function": {"name": "pick_color"}},
        )
    refused_naming_tool_choice(caught)
    assert "pick_color" in str(caught.value.body["message"])  # type: ignore[index]


async def test_chat_completions_refuse_a_tool_choice_that_forces_a_call_without_tools(
    make_api: MakeApi, app_settings: Settings
) -> None:
    # Without example tools the server offers none either.
    async with make_api(app_settings) as bare, sdk_for(bare) as client:
        forcing: list[Any] = ["required", {"type": "function", "function": {"name": "pick_colour"}}]
        for choice in forcing:
            with pytest.raises(openai.BadRequestError) as caught:
                await client.chat.completions.create(
                    model="scripted",
                    messages=HELLO,
                    tool_choice=choice,
                )
            refused_naming_tool_choice(caught)
        for harmless in ("auto", "none"):  # ask for nothing a request without tools lacks
            answer = await client.chat.completions.create(
                model="scripted", messages=HELLO, tool_choice=harmless
            )
            assert answer.choices[0].message.content


async def test_responses_refuse_a_function_that_is_not_among_the_tools(sdk: AsyncOpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        await sdk.responses.create(
            model="scripted",
            input="Hi",
            tools=RESPONSES_TOOL,
            tool_choice={"type": "function", "name": "pick_color"},
        )
    refused_naming_tool_choice(caught)


async def test_responses_refuse_required_without_tools(
    make_api: MakeApi, app_settings: Settings
) -> None:
    async with make_api(app_settings) as bare, sdk_for(bare) as client:
        with pytest.raises(openai.BadRequestError) as caught:
            await client.responses.create(model="scripted", input="Hi", tool_choice="required")
        refused_naming_tool_choice(caught)


async def test_a_server_tool_may_be_named_without_client_tools(sdk: AsyncOpenAI) -> None:
    answer = await sdk.chat.completions.create(
        model="scripted",
        messages=HELLO,
        tool_choice={"type": "function", "function": {"name": SERVER_TOOL}},
    )
    assert answer.choices[0].finish_reason == "stop"
    forced = await sdk.responses.create(
        model="scripted", input="Hi", tool_choice={"type": "function", "name": SERVER_TOOL}
    )
    assert forced.status == "completed"


async def test_the_native_chat_refuses_a_function_that_is_not_among_the_tools(
    api: ApiClient,
) -> None:
    response = await api.post(
        "/api/chat",
        json={
            "messages": HELLO,
            "tools": CHAT_TOOL,
            "tool_choice": {"type": "function", "function": {"name": "pick_color"}},
        },
    )
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["code"] == "invalid_request" and error["param"] == "tool_choice"


async def test_a_conversation_turn_with_a_bad_tool_choice_stores_nothing_and_keeps_its_history(
    api: ApiClient,
) -> None:
    cid = (await api.post("/api/conversations", json={})).json()["id"]
    started = (await api.post(f"/api/conversations/{cid}/messages", json={"content": "Hi"})).json()
    assert "run_end" in (await api.get(started["events_url"])).text
    before = (await api.get(f"/api/conversations/{cid}")).json()

    refused = await api.post(
        f"/api/conversations/{cid}/messages",
        json={
            "content": "Again",
            "tools": CHAT_TOOL,
            "tool_choice": {"type": "function", "function": {"name": "pick_color"}},
        },
    )

    assert refused.status_code == 400, refused.text
    assert refused.json()["error"]["param"] == "tool_choice"
    assert (await api.get(f"/api/conversations/{cid}")).json() == before
    again = await api.post(f"/api/conversations/{cid}/messages", json={"content": "Again"})
    assert again.status_code == 202, again.text
