"""Approvals on `/v1/responses` through the official openai SDK, in process, on SQLite and
Postgres: a `confirm` tool pauses the turn as an `mcp_approval_request` alone (no
`mcp_call` until it is known to run); an `mcp_approval_response` input item decides the
stored approval with every rule of the approvals API, and the same request continues the
turn, starting with the decided call as a finished `mcp_call`."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any, cast

import openai
import pytest
from sqlalchemy import select, update

from app.examples.graph.tables import GraphNodeRow
from app.providers.scripted import Script, ScriptedProvider, ScriptedToolCall, ScriptedTurn
from app.store.tables.core import AuditRow
from app.store.tables.tools import ApprovalRow
from tests.fakes.db import ApiClient

ASK = "Add Ada, then delete her."


def script(users_api: ApiClient, *after: ScriptedTurn) -> None:
    """The model adds Ada (runs at once), then asks to delete her (waits for a human),
    then plays `after`."""
    add = ScriptedToolCall(name="add_node", id="call_add", args={"label": "Person", "name": "Ada"})
    delete = ScriptedToolCall(name="delete_node", id="call_del", args={"id": "Ada"})
    users_api.services.providers["scripted"] = ScriptedProvider(
        Script(
            mode="sequence",
            turns=[ScriptedTurn(tool_calls=[add]), ScriptedTurn(tool_calls=[delete]), *after],
        ),
        delay_ms=0,
    )


async def nodes(users_api: ApiClient) -> list[str]:
    async with users_api.services.db.sessions() as s:
        return sorted(n.name for n in await s.scalars(select(GraphNodeRow)))


async def decisions(users_api: ApiClient) -> list[dict[str, Any]]:
    async with users_api.services.db.sessions() as s:
        rows = (await s.scalars(select(AuditRow).where(AuditRow.action.like("approval.%")))).all()
    return [{"action": r.action, **(r.details or {})} for r in rows]


async def expire(api: ApiClient, approval_id: str) -> None:
    async with api.services.db.sessions() as s:
        past = datetime.now(UTC) - timedelta(seconds=1)
        await s.execute(
            update(ApprovalRow).where(ApprovalRow.id == approval_id).values(expires_at=past)
        )
        await s.commit()


def answer(approval_id: str, approve: bool = True, **extra: Any) -> dict[str, Any]:
    return {
        "type": "mcp_approval_response",
        "approval_request_id": approval_id,
        "approve": approve,
        **extra,
    }


async def paused(client: openai.AsyncOpenAI) -> tuple[list[dict[str, Any]], str]:
    """The first turn, paused: the history to send back and the approval's id."""
    first = await client.responses.create(model="scripted", input=ASK)
    kinds = [(i.type, getattr(i, "status", None)) for i in first.output]
    assert kinds == [("mcp_call", "completed"), ("mcp_approval_request", None)]
    request = first.output[1]
    assert request.type == "mcp_approval_request"
    assert (request.name, request.arguments) == ("delete_node", '{"id":"Ada"}')
    history = [
        {"role": "user", "content": ASK},
        *[item.model_dump(exclude_none=True) for item in first.output],
    ]
    return history, request.id


async def test_approving_runs_the_tool_once_and_the_turn_continues_in_the_same_stream(
    users_api: ApiClient, me: openai.AsyncOpenAI
) -> None:
    script(users_api, ScriptedTurn(text="Ada is gone."))
    history, approval_id = await paused(me)
    assert await nodes(users_api) == ["Ada"]

    stream = await me.responses.create(
        model="scripted", input=cast(Any, [*history, answer(approval_id)]), stream=True
    )
    events = [e async for e in stream]

    assert await nodes(users_api) == []
    done = [e.item for e in events if e.type == "response.output_item.done"]
    call, message = done
    assert call.type == "mcp_call"
    assert (call.id, call.status) == ("call_del", "completed")
    assert call.approval_request_id == approval_id
    assert '"deleted"' in (call.output or "")
    assert message.type == "message"
    assert "mcp_call.completed" in {e.type.removeprefix("response.") for e in events}
    assert [e.sequence_number for e in events] == list(range(len(events)))
    final = events[-1]
    assert final.type == "response.completed"
    assert [i.type for i in final.response.output] == ["mcp_call", "message"]
    [decided] = await decisions(users_api)
    assert (decided["action"], decided["via"], decided["tool_call_id"]) == (
        "approval.approve",
        "responses",
        "call_del",
    )


async def test_rejecting_never_runs_the_tool_and_shows_a_failed_call(
    users_api: ApiClient, me: openai.AsyncOpenAI
) -> None:
    script(users_api, ScriptedTurn(text="Kept Ada."))
    history, approval_id = await paused(me)

    response = await me.responses.create(
        model="scripted",
        input=cast(Any, [*history, answer(approval_id, False, reason="keep her")]),
    )

    assert await nodes(users_api) == ["Ada"]
    call = response.output[0]
    assert call.type == "mcp_call"
    assert (call.id, call.status) == ("call_del", "failed")
    assert "rejected" in (call.output or "")
    assert response.output_text == "Kept Ada."


async def test_the_whole_history_replayed_afterwards_reads_the_call_finished(
    users_api: ApiClient, me: openai.AsyncOpenAI
) -> None:
    script(users_api, ScriptedTurn(text="Ada is gone."), ScriptedTurn(text="Anything else?"))
    history, approval_id = await paused(me)
    second = await me.responses.create(
        model="scripted", input=cast(Any, [*history, answer(approval_id)])
    )
    later = [
        *history,
        answer(approval_id),
        *[i.model_dump(exclude_none=True) for i in second.output],
        {"role": "user", "content": "Thanks"},
    ]

    third = await me.responses.create(model="scripted", input=cast(Any, later))

    assert third.output_text == "Anything else?"
    assert len(await decisions(users_api)) == 1


async def _refused(call: Any, status: int, code: str) -> None:
    with pytest.raises(openai.APIStatusError) as caught:
        await call
    assert caught.value.status_code == status
    body = cast(dict[str, Any], caught.value.body)
    assert body["code"] == code, body


async def test_a_replayed_answer_is_409_and_never_runs_the_tool_again(
    users_api: ApiClient, me: openai.AsyncOpenAI
) -> None:
    script(users_api, ScriptedTurn(text="Gone."), ScriptedTurn(text="Again?"))
    history, approval_id = await paused(me)
    replay = cast(Any, [*history, answer(approval_id)])
    await me.responses.create(model="scripted", input=replay)

    await _refused(me.responses.create(model="scripted", input=replay), 409, "already_decided")
    assert len(await decisions(users_api)) == 1


async def test_another_users_approval_is_404_and_stays_pending(
    users_api: ApiClient, me: openai.AsyncOpenAI, other: openai.AsyncOpenAI
) -> None:
    script(users_api)
    history, approval_id = await paused(me)

    stolen = cast(Any, [*history, answer(approval_id)])
    await _refused(
        other.responses.create(model="scripted", input=stolen), 404, "approval_not_found"
    )
    assert await nodes(users_api) == ["Ada"]
    assert await decisions(users_api) == []


def _waiting_call(call_id: str, approval_id: str) -> dict[str, Any]:
    return {
        "type": "mcp_call",
        "id": call_id,
        "name": "delete_node",
        "server_label": "chat-bff",
        "arguments": '{"id":"Ada"}',
        "status": "calling",
        "approval_request_id": approval_id,
    }


async def test_forged_answers_are_refused(users_api: ApiClient, me: openai.AsyncOpenAI) -> None:
    script(users_api)
    history, approval_id = await paused(me)

    # Another call id than the one the approval was asked for (an `mcp_call` naming it).
    forged_call = [*history[:2], _waiting_call("call_forged", approval_id)]
    refused = me.responses.create(
        model="scripted", input=cast(Any, [*forged_call, answer(approval_id)])
    )
    await _refused(refused, 404, "approval_not_found")
    # Other arguments than the digest the approval was asked with.
    other_args = [dict(i) for i in history]
    other_args[2]["arguments"] = '{"id": "Bob"}'
    refused = me.responses.create(
        model="scripted", input=cast(Any, [*other_args, answer(approval_id)])
    )
    await _refused(refused, 409, "approval_args_mismatch")
    # An approval id nobody asked for.
    made_up = [dict(i) for i in history]
    made_up[2]["id"] = "apr_made_up"
    refused = me.responses.create(
        model="scripted", input=cast(Any, [*made_up, answer("apr_made_up")])
    )
    await _refused(refused, 404, "approval_not_found")
    # An answer with no call in the input that asks for it.
    refused = me.responses.create(
        model="scripted", input=cast(Any, [history[0], answer(approval_id)])
    )
    await _refused(refused, 400, "invalid_request")
    assert await nodes(users_api) == ["Ada"]
    assert await decisions(users_api) == []


async def test_an_expired_approval_is_409(users_api: ApiClient, me: openai.AsyncOpenAI) -> None:
    script(users_api)
    history, approval_id = await paused(me)
    await expire(users_api, approval_id)

    refused = me.responses.create(
        model="scripted", input=cast(Any, [*history, answer(approval_id)])
    )
    await _refused(refused, 409, "approval_expired")
    assert await nodes(users_api) == ["Ada"]


async def test_an_unanswered_approval_in_the_last_turn_is_409(
    users_api: ApiClient, me: openai.AsyncOpenAI
) -> None:
    script(users_api)
    history, _ = await paused(me)

    ignored = me.responses.create(model="scripted", input=cast(Any, history))
    await _refused(ignored, 409, "approval_pending")


# --- durable conversations ---------------------------------------------------------------


async def paused_conversation(client: openai.AsyncOpenAI) -> tuple[str, str]:
    conversation = await client.conversations.create()
    first = await client.responses.create(model="scripted", input=ASK, conversation=conversation.id)
    request = first.output[-1]
    assert request.type == "mcp_approval_request"
    return conversation.id, request.id


async def test_a_conversation_decides_with_the_answer_alone_and_continues(
    users_api: ApiClient, me: openai.AsyncOpenAI
) -> None:
    script(users_api, ScriptedTurn(text="Ada is gone."))
    cid, approval_id = await paused_conversation(me)

    stream = await me.responses.create(
        model="scripted",
        input=cast(Any, [answer(approval_id)]),
        conversation=cid,
        stream=True,
    )
    events = [e async for e in stream]

    assert await nodes(users_api) == []
    final = events[-1]
    assert final.type == "response.completed"
    call, _ = final.response.output
    assert (call.type, call.id, getattr(call, "status", None)) == (
        "mcp_call",
        "call_del",
        "completed",
    )
    assert final.response.output_text == "Ada is gone."
    # The stored history shows the call finished.
    items = await me.conversations.items.list(cid, order="asc")
    stored = [i for i in items.data if i.type == "mcp_call" and i.id == "call_del"]
    assert [getattr(i, "status", None) for i in stored] == ["completed"]

    again = me.responses.create(
        model="scripted", input=cast(Any, [answer(approval_id)]), conversation=cid
    )
    await _refused(again, 409, "already_decided")
    assert len(await decisions(users_api)) == 1


async def test_a_conversation_refuses_foreign_and_unknown_answers(
    users_api: ApiClient, me: openai.AsyncOpenAI, other: openai.AsyncOpenAI
) -> None:
    script(users_api)
    cid, approval_id = await paused_conversation(me)
    second = await me.conversations.create()

    # Another user cannot answer it; my answer in another conversation is 404.
    stolen = other.responses.create(
        model="scripted", input=cast(Any, [answer(approval_id)]), conversation=cid
    )
    await _refused(stolen, 404, "approval_not_found")
    elsewhere = me.responses.create(
        model="scripted",
        input=cast(Any, [answer(approval_id)]),
        conversation=second.id,
    )
    await _refused(elsewhere, 404, "approval_not_found")
    made_up = me.responses.create(
        model="scripted", input=cast(Any, [answer("apr_made_up")]), conversation=cid
    )
    await _refused(made_up, 404, "approval_not_found")
    mixed = me.responses.create(
        model="scripted",
        input=cast(Any, [answer(approval_id), {"role": "user", "content": "hi"}]),
        conversation=cid,
    )
    await _refused(mixed, 400, "invalid_request")
    assert await nodes(users_api) == ["Ada"]
    assert await decisions(users_api) == []


async def test_a_conversation_decides_nothing_when_one_answer_is_expired(
    users_api: ApiClient, me: openai.AsyncOpenAI
) -> None:
    calls = [
        ScriptedToolCall(name="add_node", id="call_a", args={"label": "P", "name": "Ada"}),
        ScriptedToolCall(name="add_node", id="call_b", args={"label": "P", "name": "Bob"}),
    ]
    deletes = [
        ScriptedToolCall(name="delete_node", id="call_da", args={"id": "Ada"}),
        ScriptedToolCall(name="delete_node", id="call_db", args={"id": "Bob"}),
    ]
    users_api.services.providers["scripted"] = ScriptedProvider(
        Script(
            mode="sequence",
            turns=[ScriptedTurn(tool_calls=calls), ScriptedTurn(tool_calls=deletes)],
        ),
        delay_ms=0,
    )
    conversation = await me.conversations.create()
    paused = await me.responses.create(
        model="scripted", input="delete both", conversation=conversation.id
    )
    asked = [i.id for i in paused.output if i.type == "mcp_approval_request"]
    assert len(asked) == 2
    async with users_api.services.db.sessions() as s:
        past = datetime.now(UTC) - timedelta(seconds=1)
        await s.execute(
            update(ApprovalRow).where(ApprovalRow.id == asked[1]).values(expires_at=past)
        )
        await s.commit()

    both = me.responses.create(
        model="scripted",
        input=cast(Any, [answer(asked[0]), answer(asked[1])]),
        conversation=conversation.id,
    )
    await _refused(both, 409, "approval_expired")
    assert await nodes(users_api) == ["Ada", "Bob"]
    assert await decisions(users_api) == []
