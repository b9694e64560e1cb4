"""Another user's conversations and runs answer 404, and ids do not cross conversations."""

from __future__ import annotations

from app.domain.identity import Caller
from app.providers.scripted import ScriptedToolCall, ScriptedTurn
from app.runs.requests import TurnInput
from app.store.repos import ConversationRepo
from app.translate.openai_chat.read import tools_from_openai
from tests.api.runs.helpers import (
    CONVERSATIONS,
    WEATHER,
    create,
    finished,
    play,
    send,
)
from tests.fakes.db import ApiClient


async def _foreign_run(client: ApiClient) -> tuple[str, str]:
    """A finished run in a conversation that belongs to someone else."""
    play(client, ScriptedTurn(tool_calls=[ScriptedToolCall(name="get_weather", id="c9")]))
    async with client.services.db.sessions.begin() as session:
        cid = (await ConversationRepo(session).create("someone-else", title="theirs")).id
    run = await client.services.runs.send(
        Caller(user_id="someone-else"),
        cid,
        "their secret",
        TurnInput(client_tools=tools_from_openai([WEATHER])),
    )
    await run.wait()
    return cid, run.run_id


async def test_sending_into_another_users_conversation_is_404(client: ApiClient) -> None:
    cid, _ = await _foreign_run(client)

    response = await client.post(f"{CONVERSATIONS}/{cid}/messages", json={"content": "hi"})

    assert response.status_code == 404


async def test_another_users_run_events_are_404(client: ApiClient) -> None:
    cid, run_id = await _foreign_run(client)

    response = await client.get(f"{CONVERSATIONS}/{cid}/runs/{run_id}/events")

    assert response.status_code == 404
    assert "their secret" not in response.text


async def test_cancelling_another_users_run_is_404(client: ApiClient) -> None:
    cid, run_id = await _foreign_run(client)

    response = await client.post(f"{CONVERSATIONS}/{cid}/runs/{run_id}/cancel")

    assert response.status_code == 404


async def test_tool_results_into_another_users_conversation_are_404(client: ApiClient) -> None:
    cid, _ = await _foreign_run(client)

    response = await client.post(
        f"{CONVERSATIONS}/{cid}/tool-results",
        json={"results": [{"toolCallId": "c9", "status": "success", "result": "x"}]},
    )

    assert response.status_code == 404


async def test_a_run_is_not_reachable_through_another_conversation(client: ApiClient) -> None:
    play(client, ScriptedTurn(text="Mine."))
    home = await create(client)
    other = await create(client)
    started = await send(client, home)
    await finished(client, started)

    events_elsewhere = await client.get(f"{CONVERSATIONS}/{other}/runs/{started['run_id']}/events")
    cancel_elsewhere = await client.post(f"{CONVERSATIONS}/{other}/runs/{started['run_id']}/cancel")

    assert (events_elsewhere.status_code, cancel_elsewhere.status_code) == (404, 404)


async def test_events_of_an_unknown_run_are_404(client: ApiClient) -> None:
    cid = await create(client)

    response = await client.get(f"{CONVERSATIONS}/{cid}/runs/run_nope/events")

    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


async def test_a_last_event_id_that_is_not_a_number_is_refused(client: ApiClient) -> None:
    play(client, ScriptedTurn(text="Hi."))
    cid = await create(client)
    started = await send(client, cid)
    await finished(client, started)

    response = await client.get(started["events_url"], headers={"Last-Event-ID": "abc"})

    assert response.status_code == 400
    assert response.json()["error"]["param"] == "Last-Event-ID"
