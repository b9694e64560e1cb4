"""Regenerate and edit answer again and keep the replaced messages as superseded versions."""

from __future__ import annotations

from app.providers.scripted import ScriptedTurn
from app.store.repos import MessageRepo
from tests.api.runs.helpers import (
    CONVERSATIONS,
    conversation,
    create,
    finished,
    play,
    send,
    text_of,
)
from tests.fakes.db import ApiClient


async def test_regenerate_answers_again_and_keeps_the_old_answer_superseded(
    client: ApiClient,
) -> None:
    play(client, ScriptedTurn(text="First answer."), ScriptedTurn(text="Second answer."))
    cid = await create(client)
    await finished(client, await send(client, cid, "Question?"))

    response = await client.post(f"{CONVERSATIONS}/{cid}/regenerate", json={})

    assert response.status_code == 202, response.text
    await finished(client, response.json())
    messages = (await conversation(client, cid))["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant"]
    assert messages[1]["content"][0]["data"]["text"] == "Second answer."
    owner = client.services.settings.local_user_id
    async with client.services.db.sessions() as session:
        records = await MessageRepo(session).records(owner, cid, include_superseded=True)
    old = [r for r in records if r.superseded_at is not None]
    assert [r.message.text() for r in old] == ["First answer."]


async def test_editing_the_last_user_message_reruns_it(client: ApiClient) -> None:
    provider = play(client, ScriptedTurn(text="About cats."), ScriptedTurn(text="About dogs."))
    cid = await create(client)
    await finished(client, await send(client, cid, "Tell me about cats"))
    [question] = [m for m in (await conversation(client, cid))["messages"] if m["role"] == "user"]

    response = await client.put(
        f"{CONVERSATIONS}/{cid}/messages/{question['id']}", json={"content": "Tell me about dogs"}
    )

    assert response.status_code == 202, response.text
    await finished(client, response.json())
    messages = (await conversation(client, cid))["messages"]
    assert [(m["role"], text_of(m)) for m in messages] == [
        ("user", "Tell me about dogs"),
        ("assistant", "About dogs."),
    ]
    assert provider.requests[1].messages[-1].text() == "Tell me about dogs"


async def test_only_the_last_user_message_can_be_edited(client: ApiClient) -> None:
    play(client, ScriptedTurn(text="One."), ScriptedTurn(text="Two."))
    cid = await create(client)
    await finished(client, await send(client, cid, "first"))
    await finished(client, await send(client, cid, "second"))
    first = (await conversation(client, cid))["messages"][0]

    response = await client.put(
        f"{CONVERSATIONS}/{cid}/messages/{first['id']}", json={"content": "changed"}
    )

    assert response.status_code == 409
    assert response.json()["error"]["code"] == "not_last_message"
    assert len((await conversation(client, cid))["messages"]) == 4


async def test_regenerate_needs_no_body(client: ApiClient) -> None:
    play(client, ScriptedTurn(text="First."), ScriptedTurn(text="Second."))
    cid = await create(client)
    await finished(client, await send(client, cid))

    again = await client.post(f"{CONVERSATIONS}/{cid}/regenerate")

    assert again.status_code == 202, again.text
