"""How a background response that did not complete reads, through the official openai
SDK, in process, on SQLite and Postgres: an upstream failure is `failed` with an `error`
(its stream says so in an `error` event, which the SDK raises), a client's cancel is
`cancelled` with no error, an answer stopped at the output token limit is `incomplete`
(reason `max_output_tokens`), and the conversation's items show the answer cut short as an
`incomplete` message item, as the stream closed it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from typing import Any

import openai
import pytest

from app.domain.stream import ModelRequest, ProviderEvent, ResponseMeta, TextDelta
from app.providers.scripted import Script, ScriptedError, ScriptedProvider, ScriptedTurn
from tests.fakes.db import ApiClient

SCRIPT = Script(
    mode="rules",
    turns=[
        ScriptedTurn(match="^fail", error=ScriptedError(status=400)),
        ScriptedTurn(match="^long", text="It goes on and", finish="length"),
    ],
)


class HalfThenSilent(ScriptedProvider):
    """`go on` says "Half" and then nothing, until the run is cancelled; anything else
    plays `SCRIPT` (`fail ...` fails upstream, `long ...` stops at the token limit)."""

    def __init__(self) -> None:
        super().__init__(SCRIPT, delay_ms=0)
        self.said = asyncio.Event()

    async def stream(self, request: ModelRequest) -> AsyncGenerator[ProviderEvent, None]:
        if request.messages[-1].text() != "go on":
            async for event in super().stream(request):
                yield event
            return
        yield ResponseMeta(response_id="half", model="scripted")
        yield TextDelta(text="Half")
        self.said.set()  # asked for more: the run took "Half"
        await asyncio.Event().wait()


@pytest.fixture(autouse=True)
def model(users_api: ApiClient) -> HalfThenSilent:
    provider = HalfThenSilent()
    users_api.services.providers["scripted"] = provider
    return provider


async def _until(client: openai.AsyncOpenAI, response_id: str, done: Any) -> Any:
    for _ in range(500):
        response = await client.responses.retrieve(response_id)
        if done(response):
            return response
        await asyncio.sleep(0.05)
    raise AssertionError(f"{response_id} never got there")


async def test_an_upstream_failure_reads_failed_with_its_error(me: openai.AsyncOpenAI) -> None:
    created = await me.responses.create(model="scripted", input="fail please", background=True)

    failed = await _until(me, created.id, lambda r: r.status != "in_progress")
    stream = await me.responses.retrieve(created.id, stream=True)
    with pytest.raises(openai.APIError) as streamed:  # the SDK raises at the `error` event
        await anext(e async for e in stream if e.type == "response.failed")

    assert (failed.status, failed.incomplete_details) == ("failed", None)
    assert failed.error is not None and failed.error.code == "server_error"
    assert failed.error.message == streamed.value.message == "scripted upstream failure"


async def test_a_cancelled_answer_reads_cancelled_and_its_item_incomplete(
    me: openai.AsyncOpenAI, model: HalfThenSilent
) -> None:
    created = await me.responses.create(model="scripted", input="go on", background=True)
    await model.said.wait()

    cancelled = await me.responses.cancel(created.id)

    assert (cancelled.status, cancelled.error, cancelled.output_text) == ("cancelled", None, "Half")
    assert cancelled.conversation is not None
    items = (await me.conversations.items.list(cancelled.conversation.id, order="asc")).data
    answer: Any = items[-1]
    assert (answer.role, answer.status, answer.content[0].text) == (
        "assistant",
        "incomplete",
        "Half",
    )


async def test_an_answer_stopped_at_the_token_limit_reads_incomplete(
    me: openai.AsyncOpenAI,
) -> None:
    created = await me.responses.create(model="scripted", input="long story", background=True)

    cut = await _until(me, created.id, lambda r: r.status != "in_progress")
    events = [e async for e in await me.responses.retrieve(created.id, stream=True)]

    assert (cut.status, cut.error, cut.output_text) == ("incomplete", None, "It goes on and")
    assert cut.incomplete_details is not None
    assert cut.incomplete_details.reason == "max_output_tokens"
    last = events[-1]
    assert last.type == "response.incomplete"
    assert last.response.model_dump() == cut.model_dump()
