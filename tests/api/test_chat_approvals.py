"""Server approvals over the stateless `/api/chat`: a `confirm` tool's call comes back as a
card the client can answer (`finish_reason: "requires_action"`, the part with its
`approvalId`; a call of the client's `approval_request` tool for AIKit's GenUI chat), and
the decision in the next request decides the stored approval with every rule of the
approvals API, runs (or rejects) the tool once and continues the turn."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from pydantic import SecretStr
from sqlalchemy import select

from app.examples.graph.tables import GraphNodeRow
from app.providers.scripted import Script, ScriptedProvider, ScriptedToolCall, ScriptedTurn
from app.settings import Settings
from app.store.tables.core import AuditRow
from tests.api.sse_frames import parse
from tests.auth.tokens import HS_SECRET, bearer, hs_token
from tests.fakes.db import ApiClient, MakeApi

URL = "/api/chat"
ADA = {"role": "user", "content": "Add Ada, then delete her."}
# AIKit's GenUI reference chat declares its confirmation card as a client tool.
APPROVAL_REQUEST = {
    "type": "function",
    "function": {
        "name": "approval_request",
        "description": "Ask the user to approve or reject a proposed action.",
        "parameters": {
            "type": "object",
            "properties": {"summary": {"type": "string"}},
            "required": ["summary"],
            "additionalProperties": False,
        },
    },
}
ALICE = bearer(hs_token(sub="alice"))
MALLORY = bearer(hs_token(sub="mallory"))


@pytest.fixture
async def client(make_api: MakeApi, app_settings: Settings) -> AsyncIterator[ApiClient]:
    settings = app_settings.model_copy(
        update={"example_tools_enabled": True, "jwt_secret": SecretStr(HS_SECRET)}
    )
    async with make_api(settings) as api:
        api.headers.update(ALICE)
        yield api


def script(client: ApiClient, *after: ScriptedTurn) -> ScriptedProvider:
    """The model adds Ada (runs at once), then asks to delete her (waits for a human),
    then plays `after` for the turns that follow the decision."""
    provider = ScriptedProvider(
        Script(
            mode="sequence",
            turns=[
                ScriptedTurn(
                    tool_calls=[
                        ScriptedToolCall(
                            name="add_node", id="call_add", args={"label": "Person", "name": "Ada"}
                        )
                    ]
                ),
                ScriptedTurn(
                    tool_calls=[
                        ScriptedToolCall(name="delete_node", id="call_del", args={"id": "Ada"})
                    ]
                ),
                *after,
            ],
        ),
        delay_ms=0,
    )
    client.services.providers["scripted"] = provider
    return provider


async def nodes(client: ApiClient) -> list[str]:
    async with client.services.db.sessions() as s:
        return sorted(n.name for n in await s.scalars(select(GraphNodeRow)))


async def pending(client: ApiClient) -> list[dict[str, Any]]:
    response = await client.get("/api/approvals")
    assert response.status_code == 200, response.text
    data: list[dict[str, Any]] = response.json()["data"]
    return data


async def chat(client: ApiClient, body: dict[str, Any], status: int = 200) -> dict[str, Any]:
    response = await client.post(URL, json=body)
    assert response.status_code == status, response.text
    answer: dict[str, Any] = response.json()
    return answer


def card(message: dict[str, Any], name: str = "delete_node") -> dict[str, Any]:
    found = [p for p in message["content"] if p["type"] == "tool" and p["data"]["toolName"] == name]
    assert len(found) == 1, message
    part: dict[str, Any] = found[0]
    return part


async def paused_genui(client: ApiClient, *after: ScriptedTurn) -> dict[str, Any]:
    script(client, *after)
    return await chat(client, {"messages": [ADA], "tools": [APPROVAL_REQUEST]})


def genui_history(answer: dict[str, Any], decision: dict[str, Any]) -> list[dict[str, Any]]:
    """What the GenUI reference sends next: its OpenAI history, the card's call answered
    by a `role: tool` message with the card's result."""
    message = answer["choices"][0]["message"]
    calls = message["tool_calls"]
    return [
        {"role": "system", "content": "You are a UI assistant."},
        ADA,
        {"role": "assistant", "content": message["content"], "tool_calls": calls},
        {"role": "tool", "tool_call_id": calls[0]["id"], "content": json.dumps(decision)},
    ]


# --- the pause --------------------------------------------------------------------------


async def test_a_confirm_tool_pauses_the_turn_with_requires_action_and_the_approval_id(
    client: ApiClient,
) -> None:
    script(client)

    answer = await chat(client, {"messages": [ADA]})

    assert answer["status"] == "requires_action"
    assert answer["choices"][0]["finish_reason"] == "requires_action"
    part = card(answer["message"])
    [approval] = await pending(client)
    assert part["id"] == "call_del"
    assert part["data"]["status"] == "waitingConfirmation"
    assert part["data"]["approvalId"] == approval["id"]
    assert part["data"]["bodyContent"]  # the summary the card shows
    assert answer["message"]["metadata"]["finish_reason"] == "requires_action"
    # Without a confirmation tool an OpenAI-shaped client gets no call it would try to run.
    assert "tool_calls" not in answer["choices"][0]["message"]
    assert await nodes(client) == ["Ada"]


async def test_the_stream_pauses_the_same_way(client: ApiClient) -> None:
    script(client)

    response = await client.post(URL, json={"messages": [ADA], "stream": True})

    frames = parse(response.text)
    [approval] = await pending(client)
    confirm = next(f for f in frames if f.event == "confirm_required")
    assert confirm.data["approval_id"] == approval["id"]
    assert confirm.data["part"]["data"]["approvalId"] == approval["id"]
    end = next(f for f in frames if f.event == "message_end").data["message"]
    assert end["metadata"]["finish_reason"] == "requires_action"
    assert card(end)["data"]["approvalId"] == approval["id"]
    assert frames[-1].data["status"] == "requires_action"


async def test_a_genui_client_gets_the_approval_as_a_call_of_its_confirmation_tool(
    client: ApiClient,
) -> None:
    answer = await paused_genui(client)

    [approval] = await pending(client)
    choice = answer["choices"][0]
    assert choice["finish_reason"] == "requires_action"
    [call] = choice["message"]["tool_calls"]
    assert call["id"] == "call_del"
    assert call["function"]["name"] == "approval_request"
    args = json.loads(call["function"]["arguments"])
    assert args == {
        "summary": approval["summary"],
        "approval_id": approval["id"],
        "tool": "delete_node",
        "arguments": {"id": "Ada"},
    }
    # The typed parts keep the truth: the server tool, waiting for its approval.
    assert card(answer["message"])["data"]["approvalId"] == approval["id"]


# --- the decision -------------------------------------------------------------------------


async def test_approving_in_the_genui_chat_runs_the_tool_once_and_continues_the_turn(
    client: ApiClient,
) -> None:
    answer = await paused_genui(client, ScriptedTurn(text="Ada is gone."))
    [approval] = await pending(client)

    history = genui_history(answer, {"approved": True, "auditText": "Approved."})
    done = await chat(client, {"messages": history, "tools": [APPROVAL_REQUEST]})

    assert done["status"] == "completed"
    assert done["choices"][0]["finish_reason"] == "stop"
    assert done["choices"][0]["message"]["content"] == "Ada is gone."
    assert await nodes(client) == []
    decided = (await client.get(f"/api/approvals/{approval['id']}")).json()
    assert decided["status"] == "approved"
    # The returned history holds what really ran, in place of the card.
    ran = card(done["messages"][2])
    assert ran["data"]["status"] == "success"
    assert ran["data"]["result"]["name"] == "Ada"
    async with client.services.db.sessions() as s:
        audit = (
            await s.scalars(select(AuditRow).where(AuditRow.action == "approval.approve"))
        ).one()
    assert (audit.details or {})["via"] == "chat"


async def test_rejecting_in_the_genui_chat_keeps_the_node_and_tells_the_model(
    client: ApiClient,
) -> None:
    answer = await paused_genui(client, ScriptedTurn(text="Kept Ada."))

    history = genui_history(answer, {"approved": False, "auditText": "Rejected."})
    done = await chat(client, {"messages": history, "tools": [APPROVAL_REQUEST]})

    assert done["choices"][0]["message"]["content"] == "Kept Ada."
    assert await nodes(client) == ["Ada"]
    rejected = card(done["messages"][2])
    assert rejected["data"]["status"] == "error"
    assert await pending(client) == []


async def test_the_continued_stream_starts_with_the_decided_part(client: ApiClient) -> None:
    answer = await paused_genui(client, ScriptedTurn(text="Done."))

    history = genui_history(answer, {"approved": True, "auditText": ""})
    response = await client.post(
        URL, json={"messages": history, "tools": [APPROVAL_REQUEST], "stream": True}
    )

    frames = parse(response.text)
    assert [f.event for f in frames[:2]] == ["run_start", "part_update"]
    update = frames[1].data
    assert update["cause"] == "approval_approved"
    assert update["part"]["id"] == "call_del"
    assert update["part"]["data"]["toolName"] == "delete_node"
    assert update["part"]["data"]["status"] == "success"
    assert frames[-1].data["status"] == "completed"


async def test_an_aikit_client_decides_with_its_typed_parts(client: ApiClient) -> None:
    script(client, ScriptedTurn(text="Deleted."))
    answer = await chat(client, {"messages": [ADA]})
    history = answer["messages"]
    part = card(history[-1])
    # What AIKit's applyToolResult makes of the card once the user accepts it.
    part["data"].update(status="success", result={"approved": True})

    done = await chat(client, {"messages": history})

    assert done["status"] == "completed"
    assert await nodes(client) == []
    assert card(done["messages"][-2])["data"]["result"]["deleted"]


async def test_a_cancelled_card_rejects(client: ApiClient) -> None:
    script(client, ScriptedTurn(text="Fine."))
    answer = await chat(client, {"messages": [ADA]})
    history = answer["messages"]
    card(history[-1])["data"]["status"] = "cancelled"

    await chat(client, {"messages": history})

    assert await nodes(client) == ["Ada"]
    assert await pending(client) == []


# --- claims that are refused ---------------------------------------------------------------


async def test_a_replayed_answer_is_409_and_never_runs_the_tool_again(client: ApiClient) -> None:
    answer = await paused_genui(client, ScriptedTurn(text="Gone."), ScriptedTurn(text="Again?"))
    history = genui_history(answer, {"approved": True, "auditText": ""})
    await chat(client, {"messages": history, "tools": [APPROVAL_REQUEST]})

    again = await chat(client, {"messages": history, "tools": [APPROVAL_REQUEST]}, 409)

    assert again["error"]["code"] == "already_decided"
    async with client.services.db.sessions() as s:
        decisions = (
            await s.scalars(select(AuditRow).where(AuditRow.action.like("approval.%")))
        ).all()
    assert len(decisions) == 1


async def test_an_earlier_decided_card_reads_as_what_ran(client: ApiClient) -> None:
    answer = await paused_genui(client, ScriptedTurn(text="Gone."), ScriptedTurn(text="Hi."))
    history = genui_history(answer, {"approved": True, "auditText": ""})
    first = await chat(client, {"messages": history, "tools": [APPROVAL_REQUEST]})
    later = [
        *history,
        {"role": "assistant", "content": first["choices"][0]["message"]["content"]},
        {"role": "user", "content": "Thanks"},
    ]

    done = await chat(client, {"messages": later, "tools": [APPROVAL_REQUEST]})

    assert done["status"] == "completed"
    assert card(done["messages"][2])["data"]["status"] == "success"


async def test_another_users_approval_is_404_and_decides_nothing(client: ApiClient) -> None:
    answer = await paused_genui(client)
    history = genui_history(answer, {"approved": True, "auditText": ""})

    response = await client.post(
        URL, json={"messages": history, "tools": [APPROVAL_REQUEST]}, headers=MALLORY
    )

    assert response.status_code == 404, response.text
    assert response.json()["error"]["code"] == "approval_not_found"
    assert len(await pending(client)) == 1
    assert await nodes(client) == ["Ada"]


async def test_a_claim_on_another_call_id_is_404(client: ApiClient) -> None:
    answer = await paused_genui(client)
    history = genui_history(answer, {"approved": True, "auditText": ""})
    history[2]["tool_calls"][0]["id"] = history[3]["tool_call_id"] = "call_forged"

    body = await chat(client, {"messages": history, "tools": [APPROVAL_REQUEST]}, 404)

    assert body["error"]["code"] == "approval_not_found"
    assert await nodes(client) == ["Ada"]


async def test_changed_arguments_are_409_and_decide_nothing(client: ApiClient) -> None:
    answer = await paused_genui(client)
    history = genui_history(answer, {"approved": True, "auditText": ""})
    call = history[2]["tool_calls"][0]["function"]
    args = json.loads(call["arguments"])
    args["arguments"] = {"id": "Analytical Engine"}
    call["arguments"] = json.dumps(args)

    body = await chat(client, {"messages": history, "tools": [APPROVAL_REQUEST]}, 409)

    assert body["error"]["code"] == "approval_args_mismatch"
    assert len(await pending(client)) == 1
    assert await nodes(client) == ["Ada"]


async def test_an_undecided_card_in_the_last_message_is_409(client: ApiClient) -> None:
    script(client)
    answer = await chat(client, {"messages": [ADA]})

    body = await chat(client, {"messages": answer["messages"]}, 409)

    assert body["error"]["code"] == "approval_pending"
    assert len(await pending(client)) == 1


# --- card states ---------------------------------------------------------------------------

WEATHER = {
    "type": "function",
    "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {}}},
}


async def test_a_client_tool_card_waits_for_submission_and_an_approval_for_confirmation(
    client: ApiClient,
) -> None:
    client.services.providers["scripted"] = ScriptedProvider(
        Script(
            mode="sequence",
            turns=[
                ScriptedTurn(
                    tool_calls=[
                        ScriptedToolCall(name="get_weather", id="call_w"),
                        ScriptedToolCall(name="delete_node", id="call_del", args={"id": "Ada"}),
                    ]
                )
            ],
        ),
        delay_ms=0,
    )

    answer = await chat(client, {"messages": [ADA], "tools": [WEATHER]})

    message = answer["message"]
    assert card(message, "get_weather")["data"]["status"] == "waitingSubmission"
    assert "approvalId" not in card(message, "get_weather")["data"]
    assert card(message)["data"]["status"] == "waitingConfirmation"
    assert card(message)["data"]["approvalId"]
