"""Client tools: the run waits for the browser's results and continues with them, also through
Anthropic."""

from __future__ import annotations

from pydantic import SecretStr

from app.domain.parts import ToolPart
from app.providers.scripted import ScriptedToolCall, ScriptedTurn
from app.settings import Settings
from tests.api.runs.helpers import (
    CONVERSATIONS,
    WEATHER,
    conversation,
    create,
    events,
    finished,
    play,
    send,
    tools_of,
    until,
)
from tests.fakes.anthropic_upstream import (
    AnthropicUpstream,
    MessageSpec,
    Text,
    ToolUse,
    spec_frames,
)
from tests.fakes.db import ApiClient, MakeApi
from tests.fakes.openai_upstream import Completion, FakeOpenAIUpstream
from tests.fakes.openai_upstream import ToolCall as OpenAIToolCall


async def test_a_client_tool_round_trip_continues_with_the_result_and_the_tools(
    client: ApiClient,
) -> None:
    provider = play(
        client,
        ScriptedTurn(
            tool_calls=[ScriptedToolCall(name="get_weather", args={"city": "Oslo"}, id="c1")]
        ),
        ScriptedTurn(text="Sunny in Oslo."),
    )
    cid = await create(client)
    first = await finished(client, await send(client, cid, "Weather?", tools=[WEATHER]))
    assert first[-1].data["status"] == "requires_action"

    response = await client.post(
        f"{CONVERSATIONS}/{cid}/tool-results",
        json={"results": [{"toolCallId": "c1", "status": "success", "result": {"sky": "sunny"}}]},
    )

    assert response.status_code == 200, response.text
    out = response.json()
    assert out["waiting"] is False
    second = await events(client, out["events_url"])
    assert second[-1].data["status"] == "completed"
    request = provider.requests[1]
    assert [t.name for t in request.tools] == ["get_weather"]
    [part] = [p for m in request.messages for p in m.parts() if isinstance(p, ToolPart)]
    assert (part.id, part.data.status, part.data.result) == ("c1", "success", {"sky": "sunny"})
    messages = (await conversation(client, cid))["messages"]
    assert messages[-1]["content"][0]["data"]["text"] == "Sunny in Oslo."
    provider.assert_all_used()


async def test_a_result_for_an_unknown_tool_call_is_404(client: ApiClient) -> None:
    play(client, ScriptedTurn(tool_calls=[ScriptedToolCall(name="get_weather", id="c1")]))
    cid = await create(client)
    await finished(client, await send(client, cid, tools=[WEATHER]))

    response = await client.post(
        f"{CONVERSATIONS}/{cid}/tool-results",
        json={"results": [{"toolCallId": "nope", "status": "success", "result": 1}]},
    )

    assert response.status_code == 404
    assert response.json()["error"]["code"] == "tool_call_not_found"


async def test_a_result_for_an_answered_tool_call_is_409(client: ApiClient) -> None:
    play(
        client,
        ScriptedTurn(
            tool_calls=[
                ScriptedToolCall(name="get_weather", args={"city": "Oslo"}, id="c1"),
                ScriptedToolCall(name="get_weather", args={"city": "Rome"}, id="c2"),
            ]
        ),
    )
    cid = await create(client)
    await finished(client, await send(client, cid, tools=[WEATHER]))
    body = {"results": [{"toolCallId": "c1", "status": "success", "result": "sunny"}]}
    first = await client.post(f"{CONVERSATIONS}/{cid}/tool-results", json=body)
    assert first.json()["waiting"] is True

    again = await client.post(f"{CONVERSATIONS}/{cid}/tool-results", json=body)

    assert again.status_code == 409
    assert again.json()["error"]["code"] == "tool_call_already_answered"


async def test_cancelling_a_run_that_waits_for_the_browser_closes_its_tool_calls(
    client: ApiClient,
) -> None:
    play(
        client,
        ScriptedTurn(tool_calls=[ScriptedToolCall(name="get_weather", args={}, id="c1")]),
        ScriptedTurn(text="Fine, something else."),
    )
    cid = await create(client)
    started = await send(client, cid, tools=[WEATHER])
    assert (await finished(client, started))[-1].data["status"] == "requires_action"

    stop = await client.post(f"{CONVERSATIONS}/{cid}/runs/{started['run_id']}/cancel")

    assert stop.json()["status"] == "requires_action"
    [part] = tools_of((await conversation(client, cid))["messages"][-1])
    assert part["data"]["status"] == "cancelled"
    late = {"results": [{"toolCallId": "c1", "status": "success", "result": "sunny"}]}
    assert (await client.post(f"{CONVERSATIONS}/{cid}/tool-results", json=late)).status_code == 409
    nxt = await finished(client, await send(client, cid, "Never mind."))
    assert nxt[-1].data["status"] == "completed"


async def test_a_client_tool_round_trip_through_anthropic(
    claude: ApiClient, anthropic_upstream: AnthropicUpstream
) -> None:
    anthropic_upstream.message(
        MessageSpec([Text("Checking."), ToolUse("get_weather", {"city": "Oslo"}, id="toolu_1")])
    )
    anthropic_upstream.message(MessageSpec([Text("Sunny in Oslo.")]))
    cid = await create(claude)
    first = await finished(claude, await send(claude, cid, "Weather?", tools=[WEATHER]))
    assert first[-1].data["status"] == "requires_action"

    response = await claude.post(
        f"{CONVERSATIONS}/{cid}/tool-results",
        json={"results": [{"toolCallId": "toolu_1", "status": "success", "result": "sunny"}]},
    )

    second = await events(claude, response.json()["events_url"])
    assert second[-1].data["status"] == "completed", second[-1].data
    request = anthropic_upstream.requests[1].json
    assert [t["name"] for t in request["tools"]] == ["get_weather"]
    results = [
        b for m in request["messages"] if isinstance(m["content"], list) for b in m["content"]
    ]
    assert any(b["type"] == "tool_result" and b["tool_use_id"] == "toolu_1" for b in results)
    anthropic_upstream.assert_all_used()


async def test_after_a_cancel_mid_tool_call_anthropic_accepts_the_next_turn(
    claude: ApiClient, anthropic_upstream: AnthropicUpstream
) -> None:
    spec = MessageSpec(
        [Text("Let me look."), ToolUse("get_weather", {"city": "Oslo"}, id="toolu_1")]
    )
    frames = spec_frames(spec)
    last_piece = max(i for i, f in enumerate(frames) if b"input_json_delta" in f)
    anthropic_upstream.message(spec, hold_after=last_piece)
    anthropic_upstream.message(MessageSpec([Text("Fine, never mind.")]))
    cid = await create(claude)
    started = await send(claude, cid, "Weather?", tools=[WEATHER])
    await until(claude, cid, started["run_id"], "tool_args_delta")
    await claude.post(f"{CONVERSATIONS}/{cid}/runs/{started['run_id']}/cancel")
    await finished(claude, started)

    again = await finished(claude, await send(claude, cid, "Forget it."))

    assert again[-1].data["status"] == "completed", again[-1].data
    assert len(anthropic_upstream.requests) == 2
    anthropic_upstream.assert_all_used()


async def test_a_new_message_while_a_client_tool_waits_is_accepted_by_anthropic(
    claude: ApiClient, anthropic_upstream: AnthropicUpstream
) -> None:
    anthropic_upstream.message(
        MessageSpec([ToolUse("get_weather", {"city": "Oslo"}, id="toolu_1")])
    )
    anthropic_upstream.message(MessageSpec([Text("Sure, something else then.")]))
    cid = await create(claude)
    first = await finished(claude, await send(claude, cid, "Weather?", tools=[WEATHER]))
    assert first[-1].data["status"] == "requires_action"

    second = await finished(claude, await send(claude, cid, "Never mind, tell me a joke."))

    assert second[-1].data["status"] == "completed", second[-1].data
    anthropic_upstream.assert_all_used()


async def test_a_new_message_while_a_client_tool_waits_answers_the_call_for_openai(
    make_api: MakeApi, app_settings: Settings, openai_upstream: FakeOpenAIUpstream
) -> None:
    settings = app_settings.model_copy(
        update={
            "openai_api_key": SecretStr("sk-test"),
            "openai_base_url": openai_upstream.base_url,
            "provider_max_retries": 0,
        }
    )
    openai_upstream.enqueue(
        Completion(tool_calls=[OpenAIToolCall("get_weather", {"city": "Oslo"}, id="call_1")]),
        Completion(text="Sure, something else then."),
    )
    async with make_api(settings) as api:
        cid = await create(api)
        await finished(api, await send(api, cid, "Weather?", tools=[WEATHER]))
        await finished(api, await send(api, cid, "Never mind."))

    sent = openai_upstream.request_bodies()[1]["messages"]
    [asked] = [i for i, m in enumerate(sent) if m.get("tool_calls")]
    assert sent[asked + 1]["role"] == "tool"
    assert sent[asked + 1]["tool_call_id"] == "call_1"
    assert sent[-1] == {"role": "user", "content": "Never mind."}
