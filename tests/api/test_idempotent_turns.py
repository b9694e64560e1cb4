"""`Idempotency-Key` on the requests that start a turn besides a message send: a
conversation's `POST /v1/responses` (through the openai SDK, whose own retry after a
dropped answer sends the same key again), regenerate and edit. A repeat answers the first
request's run, streamed from its start or whole; it never stores a second turn or starts
a second run."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx2
import openai
import pytest
from pydantic import SecretStr
from sqlalchemy import func, select

from app.providers.scripted import ScriptedToolCall, ScriptedTurn
from app.settings import Settings
from app.store.tables.core import MessageRow, RunRow
from tests.api.runs.helpers import play
from tests.api.sse_frames import parse
from tests.auth.tokens import HS_SECRET, bearer, hs_token
from tests.fakes.db import ApiClient, MakeApi

URL = "/api/conversations"
ME = bearer(hs_token(sub="me", roles=["user"]))


def keyed(key: str) -> dict[str, str]:
    return {**ME, "Idempotency-Key": key, "Content-Type": "application/json"}


@pytest.fixture
async def client(make_api: MakeApi, app_settings: Settings) -> AsyncIterator[ApiClient]:
    settings = app_settings.model_copy(
        update={"jwt_secret": SecretStr(HS_SECRET), "default_model": "scripted"}
    )
    async with make_api(settings) as api:
        yield api


async def stored_turns(client: ApiClient, cid: str) -> tuple[int, int]:
    """(user messages, runs) stored in the conversation, superseded ones included."""
    users = select(func.count()).where(MessageRow.conversation_id == cid, MessageRow.role == "user")
    runs = select(func.count()).where(RunRow.conversation_id == cid)
    async with client.services.db.sessions() as session:
        return int(await session.scalar(users) or 0), int(await session.scalar(runs) or 0)


async def conversation_with_a_turn(client: ApiClient) -> tuple[str, str]:
    """A conversation holding one answered user message: (its id, the message's id)."""
    created = await client.post(URL, json={}, headers=ME)
    cid: str = created.json()["id"]
    sent = await client.post(f"{URL}/{cid}/messages", json={"content": "Hi"}, headers=ME)
    await client.get(sent.json()["events_url"], headers=ME)
    detail = (await client.get(f"{URL}/{cid}", headers=ME)).json()
    return cid, detail["messages"][0]["id"]


def without_token(body: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in body.items() if k != "stream_token"}


# --- the openai SDK: its own retry after an answer lost on the way ---------------------------


class FirstAnswerLost(httpx2.AsyncBaseTransport):
    """The app handles every request; the answer to the first one never reaches the
    client (the connection drops on its way back), which the SDK retries by itself."""

    def __init__(self, app: Any) -> None:
        self._inner = httpx2.ASGITransport(app=app)
        self.keys: list[str | None] = []

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        self.keys.append(request.headers.get("Idempotency-Key"))
        response = await self._inner.handle_async_request(request)
        if len(self.keys) == 1:
            await response.aclose()
            raise httpx2.ReadError("connection reset by peer", request=request)
        return response


@pytest.fixture
def dropping(client: ApiClient) -> FirstAnswerLost:
    return FirstAnswerLost(client.app)


@pytest.fixture
async def sdk(dropping: FirstAnswerLost) -> AsyncIterator[openai.AsyncOpenAI]:
    """The openai SDK with its default retries, signed in as `me`."""
    http = httpx2.AsyncClient(transport=dropping, base_url="http://t")
    async with openai.AsyncOpenAI(
        api_key=hs_token(sub="me", roles=["user"]), base_url="http://t/v1", http_client=http
    ) as sdk:
        yield sdk


async def test_the_sdks_retry_of_a_lost_response_is_the_same_response_and_one_turn(
    client: ApiClient, sdk: openai.AsyncOpenAI, dropping: FirstAnswerLost
) -> None:
    play(client, ScriptedTurn(text="Once."), ScriptedTurn(text="Twice."))
    conversation = await client.post(URL, json={}, headers=ME)
    cid = conversation.json()["id"]

    response = await sdk.responses.create(
        model="scripted",
        input="hello",
        conversation=cid,
        extra_headers={"Idempotency-Key": "resp-1"},
    )

    assert dropping.keys == ["resp-1", "resp-1"]  # the SDK sent it again, same key
    assert response.output_text == "Once."
    assert response.status == "completed"
    assert await stored_turns(client, cid) == (1, 1)
    stored = await sdk.responses.retrieve(response.id)
    assert stored.output_text == "Once."


async def test_the_sdks_retry_of_a_lost_stream_follows_the_same_run(
    client: ApiClient, sdk: openai.AsyncOpenAI
) -> None:
    play(client, ScriptedTurn(text="Once."), ScriptedTurn(text="Twice."))
    cid = (await client.post(URL, json={}, headers=ME)).json()["id"]

    stream = await sdk.responses.create(
        model="scripted",
        input="hello",
        conversation=cid,
        stream=True,
        extra_headers={"Idempotency-Key": "resp-1"},
    )
    events = [event async for event in stream]

    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert events[-1].type == "response.completed"
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert text == "Once."
    assert await stored_turns(client, cid) == (1, 1)


async def test_a_responses_key_reused_with_another_input_is_refused(
    client: ApiClient, sdk: openai.AsyncOpenAI
) -> None:
    play(client, ScriptedTurn(text="Once."), ScriptedTurn(text="Twice."))
    cid = (await client.post(URL, json={}, headers=ME)).json()["id"]
    key = {"Idempotency-Key": "resp-1"}
    await sdk.responses.create(model="scripted", input="hello", conversation=cid, extra_headers=key)

    with pytest.raises(openai.UnprocessableEntityError) as refused:
        await sdk.responses.create(
            model="scripted", input="bye", conversation=cid, extra_headers=key
        )

    assert refused.value.code == "idempotency_key_reused"
    assert await stored_turns(client, cid) == (1, 1)


async def test_a_repeated_streamed_response_replays_the_first_runs_events(
    client: ApiClient,
) -> None:
    play(client, ScriptedTurn(text="Once."), ScriptedTurn(text="Twice."))
    cid = (await client.post(URL, json={}, headers=ME)).json()["id"]
    body = {"model": "scripted", "input": "hello", "conversation": cid, "stream": True}

    first = await client.post("/v1/responses", json=body, headers=keyed("r"))
    again = await client.post("/v1/responses", json=body, headers=keyed("r"))

    assert first.status_code == again.status_code == 200, again.text
    assert [timeless(f.data) for f in parse(again.text)] == [
        timeless(f.data) for f in parse(first.text)
    ]
    assert await stored_turns(client, cid) == (1, 1)


def timeless(event: Any) -> Any:
    """An event without its response's `created_at`: a repeat's is the run's start, which
    can be a second before the first answer's clock read."""
    if isinstance(event, dict) and isinstance(event.get("response"), dict):
        response = {k: v for k, v in event["response"].items() if k != "created_at"}
        return {**event, "response": response}
    return event


# --- regenerate and edit -------------------------------------------------------------------


async def test_a_repeated_regenerate_answers_the_same_run_and_starts_no_second(
    client: ApiClient,
) -> None:
    play(client, *(ScriptedTurn(text=f"Answer {n}.") for n in range(4)))
    cid, _ = await conversation_with_a_turn(client)
    url = f"{URL}/{cid}/regenerate"

    first = await client.post(url, json={}, headers=keyed("g-1"))
    await client.get(first.json()["events_url"], headers=ME)
    again = await client.post(url, json={}, headers=keyed("g-1"))

    assert first.status_code == again.status_code == 202, again.text
    assert without_token(again.json()) == without_token(first.json())
    assert await stored_turns(client, cid) == (1, 2)
    # Another key is another regenerate, as without one.
    other = await client.post(url, json={}, headers=keyed("g-2"))
    assert other.json()["run_id"] != first.json()["run_id"]


async def test_a_repeated_streamed_regenerate_follows_the_first_run(client: ApiClient) -> None:
    play(client, *(ScriptedTurn(text=f"Answer {n}.") for n in range(4)))
    cid, _ = await conversation_with_a_turn(client)
    url = f"{URL}/{cid}/regenerate"

    first = await client.post(url, json={"stream": True}, headers=keyed("g-1"))
    again = await client.post(url, json={"stream": True}, headers=keyed("g-1"))

    assert first.status_code == again.status_code == 200, again.text
    assert [(f.id, f.event, f.data) for f in parse(again.text)] == [
        (f.id, f.event, f.data) for f in parse(first.text)
    ]
    assert await stored_turns(client, cid) == (1, 2)


async def test_a_repeated_edit_answers_the_same_run_and_stores_one_new_version(
    client: ApiClient,
) -> None:
    play(client, *(ScriptedTurn(text=f"Answer {n}.") for n in range(4)))
    cid, message_id = await conversation_with_a_turn(client)
    url = f"{URL}/{cid}/messages/{message_id}"

    first = await client.put(url, json={"content": "Hello"}, headers=keyed("e-1"))
    await client.get(first.json()["events_url"], headers=ME)
    again = await client.put(url, json={"content": "Hello"}, headers=keyed("e-1"))
    reused = await client.put(url, json={"content": "Other"}, headers=keyed("e-1"))

    assert first.status_code == again.status_code == 202, again.text
    assert without_token(again.json()) == without_token(first.json())
    assert reused.status_code == 422, reused.text
    assert reused.json()["error"]["code"] == "idempotency_key_reused"
    assert await stored_turns(client, cid) == (2, 2)


# --- client tool results -------------------------------------------------------------------

WEATHER = {
    "type": "function",
    "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {}}},
}


def asks(*ids: str) -> ScriptedTurn:
    return ScriptedTurn(tool_calls=[ScriptedToolCall(name="get_weather", id=i) for i in ids])


async def waiting_for_results(client: ApiClient) -> str:
    """A conversation whose last answer waits for the browser's get_weather results."""
    cid = (await client.post(URL, json={}, headers=ME)).json()["id"]
    body = {"content": "Weather?", "tools": [WEATHER]}
    sent = await client.post(f"{URL}/{cid}/messages", json=body, headers=ME)
    await client.get(sent.json()["events_url"], headers=ME)
    return str(cid)


def result(call_id: str) -> dict[str, Any]:
    return {"toolCallId": call_id, "status": "success", "result": {"sky": "sunny"}}


async def test_repeated_tool_results_answer_the_same_continuation(client: ApiClient) -> None:
    play(client, asks("c1"), ScriptedTurn(text="Sunny."), ScriptedTurn(text="Again."))
    cid = await waiting_for_results(client)
    url, body = f"{URL}/{cid}/tool-results", {"results": [result("c1")]}

    first = await client.post(url, json=body, headers=keyed("t-1"))
    await client.get(first.json()["events_url"], headers=ME)
    again = await client.post(url, json=body, headers=keyed("t-1"))
    streamed = await client.post(url, json={**body, "stream": True}, headers=keyed("t-2"))

    assert first.status_code == again.status_code == 200, again.text
    assert again.json() == first.json()
    assert first.json()["waiting"] is False
    assert await stored_turns(client, cid) == (1, 2)
    # Under another key it is another request, refused as before: nothing waits now.
    assert streamed.status_code == 404, streamed.text
    assert streamed.json()["error"]["code"] == "tool_call_not_found"


async def test_a_repeated_streamed_tool_result_follows_the_same_run(client: ApiClient) -> None:
    play(client, asks("c1"), ScriptedTurn(text="Sunny."), ScriptedTurn(text="Again."))
    cid = await waiting_for_results(client)
    url, body = f"{URL}/{cid}/tool-results", {"results": [result("c1")], "stream": True}

    first = await client.post(url, json=body, headers=keyed("t-1"))
    again = await client.post(url, json=body, headers=keyed("t-1"))

    assert first.status_code == again.status_code == 200, again.text
    assert [(f.id, f.event, f.data) for f in parse(again.text)] == [
        (f.id, f.event, f.data) for f in parse(first.text)
    ]
    assert parse(again.text)[-1].event == "run_end"
    assert await stored_turns(client, cid) == (1, 2)


async def test_a_repeated_partial_tool_result_still_waits_and_stores_nothing_again(
    client: ApiClient,
) -> None:
    play(client, asks("c1", "c2"), ScriptedTurn(text="Sunny."))
    cid = await waiting_for_results(client)
    url = f"{URL}/{cid}/tool-results"

    first = await client.post(url, json={"results": [result("c1")]}, headers=keyed("t-1"))
    again = await client.post(url, json={"results": [result("c1")]}, headers=keyed("t-1"))
    rest = await client.post(url, json={"results": [result("c2")]}, headers=keyed("t-2"))

    assert first.status_code == again.status_code == 200, again.text
    assert again.json() == first.json() == {"run_id": None, "events_url": None, "waiting": True}
    assert rest.json()["waiting"] is False
    assert await stored_turns(client, cid) == (1, 2)


async def test_the_sdks_retry_of_a_lost_background_response_is_one_response(
    client: ApiClient, sdk: openai.AsyncOpenAI, dropping: FirstAnswerLost
) -> None:
    play(client, ScriptedTurn(text="Once."), ScriptedTurn(text="Twice."))

    started = await sdk.responses.create(
        model="scripted",
        input="hello",
        background=True,
        extra_headers={"Idempotency-Key": "bg-1"},
    )

    assert dropping.keys == ["bg-1", "bg-1"]
    async with client.services.db.sessions() as session:
        conversations = (await session.scalars(select(RunRow.conversation_id))).all()
    assert len(conversations) == 1  # one run, in one conversation
    assert await stored_turns(client, str(conversations[0])) == (1, 1)
    replay = await sdk.responses.retrieve(started.id, stream=True)
    events = [event async for event in replay]
    assert events[-1].type == "response.completed"
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert text == "Once."


async def test_the_sdks_retry_of_a_lost_background_tool_continuation_runs_the_model_once(
    client: ApiClient, sdk: openai.AsyncOpenAI, dropping: FirstAnswerLost
) -> None:
    play(client, ScriptedTurn(text="Sunny, once."), ScriptedTurn(text="Sunny, twice."))
    weather: Any = {"type": "function", "name": "get_weather", "parameters": {"type": "object"}}

    started = await sdk.responses.create(
        model="scripted",
        tools=[weather],
        background=True,
        input=[
            {"role": "user", "content": "Weather?"},
            {"type": "function_call", "call_id": "c1", "name": "get_weather", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": "sunny"},
        ],
        extra_headers={"Idempotency-Key": "bg-tools-1"},
    )

    assert dropping.keys == ["bg-tools-1", "bg-tools-1"]
    async with client.services.db.sessions() as session:
        conversations = (await session.scalars(select(RunRow.conversation_id))).all()
    assert len(conversations) == 1  # one run, in one conversation
    assert await stored_turns(client, str(conversations[0])) == (1, 1)
    events = [e async for e in await sdk.responses.retrieve(started.id, stream=True)]
    assert events[-1].type == "response.completed"
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert text == "Sunny, once."


# --- the Vercel AI SDK's useChat (/api/ui/chat) ---------------------------------------------


def ui_body(trigger: str = "submit-message") -> dict[str, Any]:
    user = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Hi"}]}
    return {"id": "chat-1", "messages": [user], "trigger": trigger}


def ui_cid(first: Any) -> str:
    start = next(f for f in parse_ui(first.text) if f["type"] == "start")
    return str(start["messageMetadata"]["conversationId"])


def parse_ui(text: str) -> list[dict[str, Any]]:
    blocks = [b.removeprefix("data: ") for b in text.split("\n\n") if b.startswith("data: ")]
    return [json.loads(b) for b in blocks if b != "[DONE]"]


async def test_a_repeated_usechat_message_streams_the_first_run_and_starts_no_second(
    client: ApiClient,
) -> None:
    play(client, ScriptedTurn(text="Once."), ScriptedTurn(text="Twice."))

    first = await client.post("/api/ui/chat?v=6", json=ui_body(), headers=keyed("c-1"))
    again = await client.post("/api/ui/chat?v=6", json=ui_body(), headers=keyed("c-1"))

    assert first.status_code == again.status_code == 200, again.text
    assert parse_ui(again.text) == parse_ui(first.text)
    assert await stored_turns(client, ui_cid(first)) == (1, 1)


async def test_a_repeated_usechat_regenerate_streams_the_first_run(client: ApiClient) -> None:
    play(client, *(ScriptedTurn(text=f"Answer {n}.") for n in range(4)))
    await client.post("/api/ui/chat?v=6", json=ui_body(), headers=ME)
    body = ui_body("regenerate-message")

    first = await client.post("/api/ui/chat?v=6", json=body, headers=keyed("c-1"))
    again = await client.post("/api/ui/chat?v=6", json=body, headers=keyed("c-1"))

    assert first.status_code == again.status_code == 200, again.text
    assert parse_ui(again.text) == parse_ui(first.text)
    assert await stored_turns(client, ui_cid(first)) == (1, 2)
