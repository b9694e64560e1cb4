"""The conversation holding a background response sent without one is not listed, until
its owner continues it with a message of their own (`conversation=<its id>` on
`POST /v1/responses`, or `POST /api/conversations/{id}/messages`): a chat the person
continued is theirs to see, in `GET /api/conversations` like any other. A message refused
(the held run still going: 409) leaves it unlisted, and so does a chain of responses
(`previous_response_id`), which names no conversation. Through the official openai SDK, in
process, on SQLite and Postgres."""

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


async def _listed(users_api: ApiClient, client: openai.AsyncOpenAI) -> list[str]:
    headers = {"Authorization": f"Bearer {client.api_key}"}
    page = await users_api.get("/api/conversations", params={"archived": "all"}, headers=headers)
    assert page.status_code == 200
    return [c["id"] for c in page.json()["data"]]


async def _held(client: openai.AsyncOpenAI, text: str) -> Any:
    """A background response without a conversation, once it ended (or, for `stall`,
    while it runs)."""
    response = await client.responses.create(model="scripted", input=text, background=True)
    for _ in range(1000):
        if text == "stall" or response.status != "in_progress":
            break
        await asyncio.sleep(0.01)
        response = await client.responses.retrieve(response.id)
    assert response.conversation is not None
    return response


async def test_a_held_conversation_the_client_continues_is_listed_once_a_message_is_taken(
    users_api: ApiClient, me: openai.AsyncOpenAI, other: openai.AsyncOpenAI
) -> None:
    held = await _held(me, "stall")
    cid = held.conversation.id
    with pytest.raises(openai.ConflictError):  # its background run still holds it
        await me.responses.create(model="scripted", input="hello again", conversation=cid)
    with pytest.raises(openai.NotFoundError):  # not theirs
        await other.responses.create(model="scripted", input="hello", conversation=cid)
    await me.responses.cancel(held.id)
    # A chain of responses names no conversation: the person never saw one.
    chained = await me.responses.create(
        model="scripted", input="hello there", previous_response_id=held.id
    )
    assert chained.conversation is not None and chained.conversation.id == cid
    assert (await _listed(users_api, me), await _listed(users_api, other)) == ([], [])

    after = await me.responses.create(model="scripted", input="hello again", conversation=cid)

    assert (after.status, after.output_text) == ("completed", "Hello from chat-bff.")
    assert (await _listed(users_api, me), await _listed(users_api, other)) == ([cid], [])


async def test_a_held_conversation_continued_on_the_native_api_is_listed(
    users_api: ApiClient, me: openai.AsyncOpenAI
) -> None:
    cid = (await _held(me, "hello there")).conversation.id
    headers = {"Authorization": f"Bearer {me.api_key}"}

    sent = await users_api.post(
        f"/api/conversations/{cid}/messages",
        json={"content": "hello again"},
        headers=headers | {"Accept": "application/json"},
    )

    assert sent.status_code == 202, sent.text
    assert await _listed(users_api, me) == [cid]
