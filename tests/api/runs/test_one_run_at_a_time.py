"""One run per conversation: a second send (or regenerate) while one runs is 409 with its id."""

from __future__ import annotations

import asyncio

from app.providers.scripted import ScriptedTurn
from tests.api.runs.helpers import CONVERSATIONS, conversation, create, play, send
from tests.fakes.db import ApiClient


async def test_a_second_send_while_a_run_is_active_is_409_with_its_id(client: ApiClient) -> None:
    play(client, ScriptedTurn(text="slow", stall_seconds=30))
    cid = await create(client)
    started = await send(client, cid)

    response = await client.post(f"{CONVERSATIONS}/{cid}/messages", json={"content": "again"})

    assert response.status_code == 409
    assert response.json()["error"]["active_run_id"] == started["run_id"]
    await client.post(f"{CONVERSATIONS}/{cid}/runs/{started['run_id']}/cancel")


async def test_the_conversation_shows_its_active_run(client: ApiClient) -> None:
    play(client, ScriptedTurn(text="slow", stall_seconds=30))
    cid = await create(client)
    started = await send(client, cid)

    during = await conversation(client, cid)
    await client.post(f"{CONVERSATIONS}/{cid}/runs/{started['run_id']}/cancel")
    after = await conversation(client, cid)

    assert during["active_run_id"] == started["run_id"]
    assert after["active_run_id"] is None


async def test_concurrent_sends_start_exactly_one_run(client: ApiClient) -> None:
    play(client, ScriptedTurn(text="slow", stall_seconds=30))
    cid = await create(client)
    url = f"{CONVERSATIONS}/{cid}/messages"

    responses = await asyncio.gather(
        *(client.post(url, json={"content": f"message {i}"}) for i in range(5))
    )

    statuses = sorted(r.status_code for r in responses)
    assert statuses == [202, 409, 409, 409, 409], [r.text for r in responses]
    [winner] = [r.json()["run_id"] for r in responses if r.status_code == 202]
    assert {r.json()["error"]["active_run_id"] for r in responses if r.status_code == 409} == {
        winner
    }
    await client.post(f"{CONVERSATIONS}/{cid}/runs/{winner}/cancel")
    users = [m for m in (await conversation(client, cid))["messages"] if m["role"] == "user"]
    assert len(users) == 1


async def test_regenerate_while_a_run_is_active_is_409(client: ApiClient) -> None:
    play(client, ScriptedTurn(text="slow", stall_seconds=30))
    cid = await create(client)
    started = await send(client, cid)

    response = await client.post(f"{CONVERSATIONS}/{cid}/regenerate", json={})

    assert response.status_code == 409
    assert response.json()["error"]["active_run_id"] == started["run_id"]
    await client.post(f"{CONVERSATIONS}/{cid}/runs/{started['run_id']}/cancel")
