"""`previous_response_id` on `POST /v1/responses` through the official openai SDK, in
process, on SQLite and Postgres: a stored response (a conversation's turn or a
background response) is continued as the next turn of its conversation, streamed or
not, in the background, under an Idempotency-Key, and with the outputs of its function
calls; it can itself be chained and retrieved. An unknown, another user's or a stateless
response is 400 `previous_response_not_found` (OpenAI's answer), alike for all three;
with `conversation` it is 400 `mutually_exclusive_parameters`; an earlier response of a
conversation that went on (a fork) is 400 `previous_response_not_latest`, and nothing
is stored."""

from __future__ import annotations

import asyncio
from typing import Any

import openai
import pytest

from app.providers.scripted import Script, ScriptedProvider, ScriptedToolCall, ScriptedTurn
from tests.fakes.db import ApiClient

WEATHER: Any = {
    "type": "function",
    "name": "get_weather",
    "description": "Weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
}
SCRIPT = Script(
    mode="rules",
    turns=[
        ScriptedTurn(after_tool="get_weather", text="Sunny it is, then."),
        ScriptedTurn(after_tool="delete_node", text="Deleted, as approved."),
        ScriptedTurn(
            match="^delete",
            tool_calls=[ScriptedToolCall(id="call_d", name="delete_node", args={"id": "Ada"})],
        ),
        ScriptedTurn(match="^hello", text="Hello from chat-bff."),
        ScriptedTurn(match="^more", text="More from chat-bff."),
        ScriptedTurn(match="^again", text="Again from chat-bff."),
        ScriptedTurn(
            match="^weather",
            tool_calls=[ScriptedToolCall(id="call_w", name="get_weather", args={"city": "Oslo"})],
        ),
    ],
)


@pytest.fixture
def provider(users_api: ApiClient) -> ScriptedProvider:
    scripted = ScriptedProvider(SCRIPT, delay_ms=0)
    users_api.services.providers["scripted"] = scripted
    return scripted


def _said(provider: ScriptedProvider) -> list[tuple[str, str]]:
    """What the model was last sent: each message's role and text, the system's aside."""
    return [(m.role, m.text()) for m in provider.requests[-1].messages if m.role != "system"]


async def _first(client: openai.AsyncOpenAI, text: str = "hello", **extra: Any) -> Any:
    conversation = await client.conversations.create()
    return await client.responses.create(
        model="scripted", input=text, conversation=conversation.id, **extra
    )


async def _ended(client: openai.AsyncOpenAI, response_id: str) -> Any:
    for _ in range(400):
        response = await client.responses.retrieve(response_id)
        if response.status not in ("queued", "in_progress"):
            return response
        await asyncio.sleep(0.025)
    raise AssertionError(f"{response_id} did not end")


def _refusal(caught: pytest.ExceptionInfo[openai.BadRequestError]) -> dict[str, Any]:
    body: Any = caught.value.body
    return dict(body)


async def test_a_chained_response_continues_its_conversation_and_chains_on(
    me: openai.AsyncOpenAI, provider: ScriptedProvider
) -> None:
    first = await _first(me)

    second = await me.responses.create(
        model="scripted", input="more please", previous_response_id=first.id
    )
    assert _said(provider) == [
        ("user", "hello"),
        ("assistant", "Hello from chat-bff."),
        ("user", "more please"),
    ]
    third = await me.responses.create(
        model="scripted", input="again", previous_response_id=second.id
    )

    assert (second.status, second.output_text) == ("completed", "More from chat-bff.")
    assert second.previous_response_id == first.id
    assert third.previous_response_id == second.id
    assert len(_said(provider)) == 5
    assert second.conversation is not None and first.conversation is not None
    assert second.conversation.id == first.conversation.id
    retrieved = await me.responses.retrieve(third.id)
    assert retrieved.output_text == "Again from chat-bff."
    items = await me.conversations.items.list(first.conversation.id, order="asc")
    assert [i.role for i in items.data if i.type == "message"] == ["user", "assistant"] * 3


async def test_a_streamed_chained_response_ends_as_the_unstreamed_one_would(
    me: openai.AsyncOpenAI, provider: ScriptedProvider
) -> None:
    first = await _first(me)

    stream = await me.responses.create(
        model="scripted", input="more", previous_response_id=first.id, stream=True
    )
    events = [e async for e in stream]

    done = events[-1]
    assert done.type == "response.completed"
    assert done.response.previous_response_id == first.id
    assert done.response.output_text == "More from chat-bff."
    assert _said(provider)[:2] == [("user", "hello"), ("assistant", "Hello from chat-bff.")]


async def test_a_background_response_is_continued_in_the_background(
    me: openai.AsyncOpenAI, provider: ScriptedProvider
) -> None:
    started = await me.responses.create(
        model="scripted", input="hello", background=True, instructions="Be brief."
    )
    first = await _ended(me, started.id)

    # The same instructions sent again (as agent frameworks do every turn) are accepted.
    chained = await me.responses.create(
        model="scripted",
        input="more",
        previous_response_id=first.id,
        background=True,
        instructions="Be brief.",
    )
    assert chained.status in ("queued", "in_progress", "completed")
    second = await _ended(me, chained.id)

    assert (second.status, second.output_text) == ("completed", "More from chat-bff.")
    assert _said(provider) == [
        ("user", "hello"),
        ("assistant", "Hello from chat-bff."),
        ("user", "more"),
    ]
    assert [m.text() for m in provider.requests[-1].messages if m.role == "system"][:1] == [
        "Be brief."
    ]
    with pytest.raises(openai.BadRequestError) as caught:
        await me.responses.create(
            model="scripted", input="again", previous_response_id=second.id, instructions="No."
        )
    assert caught.value.param == "instructions"


async def test_a_repeat_under_its_idempotency_key_answers_the_first_turn(
    me: openai.AsyncOpenAI, provider: ScriptedProvider
) -> None:
    first = await _first(me)
    key = {"Idempotency-Key": "chain-1"}

    once = await me.responses.create(
        model="scripted", input="more", previous_response_id=first.id, extra_headers=key
    )
    again = await me.responses.create(
        model="scripted", input="more", previous_response_id=first.id, extra_headers=key
    )

    assert again.id == once.id
    assert again.output_text == "More from chat-bff."
    assert first.conversation is not None
    items = await me.conversations.items.list(first.conversation.id, order="asc")
    assert len([i for i in items.data if i.type == "message"]) == 4


async def test_function_call_outputs_continue_the_previous_response(
    me: openai.AsyncOpenAI, provider: ScriptedProvider
) -> None:
    asked = await _first(me, "weather in Oslo?", tools=[WEATHER])
    [call] = [i for i in asked.output if i.type == "function_call"]
    assert call.call_id == "call_w"

    with pytest.raises(openai.BadRequestError) as unknown:
        await me.responses.create(
            model="scripted",
            input=[{"type": "function_call_output", "call_id": "call_x", "output": "?"}],
            previous_response_id=asked.id,
            tools=[WEATHER],
        )
    answered = await me.responses.create(
        model="scripted",
        input=[{"type": "function_call_output", "call_id": "call_w", "output": '{"sky": 1}'}],
        previous_response_id=asked.id,
        tools=[WEATHER],
    )

    assert "call_x" in unknown.value.message
    assert (answered.status, answered.output_text) == ("completed", "Sunny it is, then.")
    assert answered.previous_response_id == asked.id
    sent = provider.requests[-1].messages
    [part] = [p for m in sent for p in m.tool_parts()]
    assert (part.id, part.data.status, part.data.result) == ("call_w", "success", {"sky": 1})


async def test_function_call_outputs_sent_again_under_their_key_answer_the_first_turn(
    me: openai.AsyncOpenAI, provider: ScriptedProvider
) -> None:
    asked = await _first(me, "weather in Oslo?", tools=[WEATHER])
    output: Any = [{"type": "function_call_output", "call_id": "call_w", "output": "sunny"}]
    key = {"Idempotency-Key": "outputs-1"}

    once = await me.responses.create(
        model="scripted", input=output, previous_response_id=asked.id, extra_headers=key
    )
    again = await me.responses.create(
        model="scripted", input=output, previous_response_id=asked.id, extra_headers=key
    )

    assert again.id == once.id
    assert again.output_text == "Sunny it is, then."
    assert asked.conversation is not None
    items = await me.conversations.items.list(asked.conversation.id, order="asc")
    assert [i.type for i in items.data] == [
        "message",
        "function_call",
        "function_call_output",
        "message",
    ]


async def test_an_approval_answered_with_previous_response_id_continues_its_turn(
    me: openai.AsyncOpenAI, provider: ScriptedProvider
) -> None:
    paused = await _first(me, "delete Ada")
    ask = paused.output[-1]
    assert ask.type == "mcp_approval_request"
    answer: Any = [
        {"type": "mcp_approval_response", "approval_request_id": ask.id, "approve": True}
    ]

    decided = await me.responses.create(
        model="scripted", input=answer, previous_response_id=paused.id
    )

    assert (decided.status, decided.output_text) == ("completed", "Deleted, as approved.")
    assert decided.previous_response_id == paused.id
    assert [(i.type, i.id) for i in decided.output if i.type == "mcp_call"] == [
        ("mcp_call", "call_d")
    ]


async def test_a_user_message_without_the_outputs_a_response_waits_for_is_refused(
    me: openai.AsyncOpenAI, provider: ScriptedProvider
) -> None:
    asked = await _first(me, "weather in Oslo?", tools=[WEATHER])

    with pytest.raises(openai.BadRequestError) as caught:
        await me.responses.create(
            model="scripted",
            input=[
                {"type": "function_call_output", "call_id": "call_w", "output": "x"},
                {"role": "user", "content": "and now?"},
            ],
            previous_response_id=asked.id,
        )

    assert caught.value.param == "input[1]"


async def test_unknown_other_users_and_stateless_responses_are_not_found_alike(
    me: openai.AsyncOpenAI, other: openai.AsyncOpenAI, provider: ScriptedProvider
) -> None:
    mine = await _first(me)
    stateless = await me.responses.create(model="scripted", input="hello")

    answers = []
    for client, response_id in (
        (other, mine.id),
        (me, stateless.id),
        (me, "resp_0123456789abcdef0123456789abcdef"),
        (me, "not-a-response-id"),
    ):
        for stream in (False, True):
            with pytest.raises(openai.BadRequestError) as caught:
                await client.responses.create(
                    model="scripted", input="more", previous_response_id=response_id, stream=stream
                )
            error = _refusal(caught)
            assert (error["code"], error["param"]) == (
                "previous_response_not_found",
                "previous_response_id",
            )
            assert caught.value.status_code == 400
            answers.append(error["message"].replace(response_id, "<id>"))
    assert len(set(answers)) == 1
    assert "Hello from chat-bff." not in answers[0]


async def test_previous_response_id_with_conversation_is_refused_as_openai_does(
    me: openai.AsyncOpenAI, provider: ScriptedProvider
) -> None:
    first = await _first(me)
    assert first.conversation is not None

    with pytest.raises(openai.BadRequestError) as caught:
        await me.responses.create(
            model="scripted",
            input="more",
            previous_response_id=first.id,
            conversation=first.conversation.id,
        )

    assert caught.value.code == "mutually_exclusive_parameters"
    assert "'previous_response_id' or 'conversation'" in caught.value.message


async def test_a_fork_from_an_earlier_response_is_refused_and_stores_nothing(
    me: openai.AsyncOpenAI, provider: ScriptedProvider
) -> None:
    first = await _first(me)
    second = await me.responses.create(
        model="scripted", input="more", previous_response_id=first.id
    )
    assert first.conversation is not None
    before = await me.conversations.items.list(first.conversation.id, order="asc")

    for stream, background in ((False, False), (True, False), (False, True)):
        with pytest.raises(openai.BadRequestError) as caught:
            await me.responses.create(
                model="scripted",
                input="again",
                previous_response_id=first.id,
                stream=stream,
                background=background,
            )
        assert caught.value.code == "previous_response_not_latest"
        assert second.id in caught.value.message

    after = await me.conversations.items.list(first.conversation.id, order="asc")
    assert [i.id for i in after.data] == [i.id for i in before.data]
    # The refusals left the conversation free: its latest response is continued at once.
    latest = await me.responses.create(
        model="scripted", input="again", previous_response_id=second.id
    )
    assert latest.output_text == "Again from chat-bff."


async def test_two_outputs_for_one_call_are_refused_naming_the_second_item(
    me: openai.AsyncOpenAI, provider: ScriptedProvider
) -> None:
    asked = await _first(me, "weather in Oslo?", tools=[WEATHER])
    output: Any = {"type": "function_call_output", "call_id": "call_w", "output": "sunny"}

    with pytest.raises(openai.BadRequestError) as caught:
        await me.responses.create(
            model="scripted", input=[output, output], previous_response_id=asked.id
        )

    assert caught.value.param == "input[1]"
    assert "call_w" in caught.value.message
    # Nothing was taken: the call still waits, and one output continues the turn.
    answered = await me.responses.create(
        model="scripted", input=[output], previous_response_id=asked.id
    )
    assert answered.output_text == "Sunny it is, then."
