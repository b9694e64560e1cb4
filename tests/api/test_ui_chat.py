"""`/api/ui/chat`: a useChat request becomes a durable conversation turn streamed as the
Vercel AI SDK UI message stream; approval responses decide stored approvals under every
rule of the approvals API. (The real `ai` clients drive the same routes in
`tests/e2e/vercel/`.)"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from pydantic import SecretStr

from app.api.ui_chat import conversation_id_for
from app.providers.scripted import Script, ScriptedProvider, ScriptedToolCall, ScriptedTurn
from app.settings import Settings
from tests.api.test_approvals import ADA, node_names
from tests.auth.tokens import HS_SECRET, bearer, hs_token
from tests.fakes.db import ApiClient, MakeApi


@pytest.fixture
async def client(make_api: MakeApi, app_settings: Settings) -> AsyncIterator[ApiClient]:
    settings = app_settings.model_copy(update={"example_tools_enabled": True})
    async with make_api(settings) as api:
        yield api


def user(text: str, message_id: str = "u1") -> dict[str, Any]:
    return {"id": message_id, "role": "user", "parts": [{"type": "text", "text": text}]}


def chunks(body: str) -> list[dict[str, Any]]:
    blocks = [b for b in body.split("\n\n") if b.startswith("data: ")]
    assert blocks[-1] == "data: [DONE]"
    return [json.loads(b.removeprefix("data: ")) for b in blocks[:-1]]


async def send(
    client: ApiClient, chat_id: str, message: dict[str, Any], v: int = 6, status: int = 200
) -> Any:
    body = {"id": chat_id, "messages": [message], "trigger": "submit-message"}
    response = await client.post(f"/api/ui/chat?v={v}", json=body)
    assert response.status_code == status, response.text
    if status != 200:
        return response.json()
    assert response.headers["x-vercel-ai-ui-message-stream"] == "v1"
    assert response.headers["content-type"].startswith("text/event-stream")
    return chunks(response.text)


def text_of(stream: list[dict[str, Any]]) -> str:
    return "".join(c["delta"] for c in stream if c["type"] == "text-delta")


async def test_a_chat_id_becomes_a_durable_conversation_that_later_turns_continue(
    client: ApiClient,
) -> None:
    first = await send(client, "chat-a", user("hello"))
    second = await send(client, "chat-a", user("hello again", "u2"))

    for stream in (first, second):
        assert stream[0]["type"] == "start" and stream[-1]["type"] == "finish"
        assert stream[-1]["finishReason"] == "stop"
        assert stream[-1]["messageMetadata"]["usage"]["totalTokens"] >= 0
    cid = first[0]["messageMetadata"]["conversationId"]
    assert cid == second[0]["messageMetadata"]["conversationId"]
    assert cid == conversation_id_for("local", "chat-a")
    detail = (await client.get(f"/api/conversations/{cid}")).json()
    assert [m["role"] for m in detail["messages"]] == ["user", "assistant"] * 2
    assert detail["messages"][1]["id"] == first[0]["messageId"]
    assert detail["messages"][1]["content"][0]["data"]["text"] == text_of(first)


def test_chat_ids_of_different_users_map_to_different_conversations() -> None:
    assert conversation_id_for("ann", "abc") != conversation_id_for("bob", "abc")
    assert conversation_id_for("ann", "abc") == conversation_id_for("ann", "abc")
    assert conversation_id_for("ann", "conv_mine") == "conv_mine"


async def test_only_the_last_message_may_be_sent(client: ApiClient) -> None:
    response = await client.post("/api/ui/chat", json={"id": "chat-b", "message": user("hi")})
    assert response.status_code == 200, response.text
    assert chunks(response.text)[-1]["type"] == "finish"


async def test_an_existing_conversation_id_is_used_and_a_foreign_one_is_404(
    client: ApiClient,
) -> None:
    created = (await client.post("/api/conversations", json={})).json()["id"]
    stream = await send(client, created, user("hi"))
    assert stream[0]["messageMetadata"]["conversationId"] == created

    missing = await send(client, "conv_notyours", user("hi"), status=404)
    assert missing["error"]["code"] == "not_found"


async def test_bad_requests_are_refused_before_anything_is_stored(client: ApiClient) -> None:
    assistant = {"id": "a1", "role": "assistant", "parts": [{"type": "text", "text": "x"}]}
    refused = await send(client, "chat-c", assistant, status=400)
    assert refused["error"]["code"] == "invalid_request"
    blank = await send(client, "chat-c", user("  "), status=400)
    assert blank["error"]["code"] == "invalid_request"
    unknown = await client.post("/api/ui/chat", json={"id": "x", "message": user("hi"), "o": 1})
    assert unknown.status_code == 422
    version = await client.post("/api/ui/chat?v=4", json={"id": "x", "message": user("hi")})
    assert version.status_code == 422


async def _pending_delete(client: ApiClient, chat_id: str, v: int) -> list[dict[str, Any]]:
    await send(client, chat_id, user(ADA), v=v)
    stream: list[dict[str, Any]] = await send(
        client, chat_id, user("delete Ada Lovelace", "u2"), v=v
    )
    return stream


def _responded(call_id: str, approval_id: str, approved: bool) -> dict[str, Any]:
    return {
        "id": "a2",
        "role": "assistant",
        "parts": [
            {"type": "step-start"},
            {
                "type": "dynamic-tool",
                "toolName": "delete_node",
                "toolCallId": call_id,
                "state": "approval-responded",
                "input": {"id": "Ada Lovelace"},
                "approval": {"id": approval_id, "approved": approved, "reason": "sure"},
            },
        ],
    }


async def test_an_approval_response_runs_the_tool_once_and_the_turn_continues(
    client: ApiClient,
) -> None:
    stream = await _pending_delete(client, "chat-d", 6)
    request = next(c for c in stream if c["type"] == "tool-approval-request")
    assert stream[-1]["finishReason"] == "tool-calls"
    assert await node_names(client) == ["Ada Lovelace", "Analytical Engine"]

    answer = _responded(request["toolCallId"], request["approvalId"], True)
    continued = await send(client, "chat-d", answer)

    assert "messageId" not in continued[0]
    settled = continued[1]
    assert settled["type"] == "tool-output-available"
    assert settled["toolCallId"] == request["toolCallId"]
    assert settled["output"]["name"] == "Ada Lovelace"
    assert continued[-1]["finishReason"] == "stop" and text_of(continued)
    assert await node_names(client) == ["Analytical Engine"]

    again = await send(client, "chat-d", answer, status=409)
    assert again["error"]["code"] == "already_decided"


@pytest.mark.parametrize("loose", ["yes", "false", 1, 0])
async def test_an_approval_that_is_not_a_json_boolean_decides_nothing(
    client: ApiClient, loose: Any
) -> None:
    # `"yes"` was read as approved and ran a destructive tool.
    stream = await _pending_delete(client, "chat-l", 6)
    request = next(c for c in stream if c["type"] == "tool-approval-request")
    answer = _responded(request["toolCallId"], request["approvalId"], True)
    answer["parts"][1]["approval"]["approved"] = loose

    refused = await send(client, "chat-l", answer, status=400)

    assert refused["error"]["param"] == "messages"
    assert await node_names(client) == ["Ada Lovelace", "Analytical Engine"]
    pending = await client.get(f"/api/approvals/{request['approvalId']}")
    assert pending.json()["status"] == "pending", pending.text
    answer["parts"][1]["approval"]["approved"] = False
    denied = await send(client, "chat-l", answer)
    assert denied[1] == {"type": "tool-output-denied", "toolCallId": request["toolCallId"]}


async def test_a_rejection_is_denied_and_the_tool_never_runs(client: ApiClient) -> None:
    stream = await _pending_delete(client, "chat-e", 7)
    request = next(c for c in stream if c["type"] == "tool-approval-request")

    continued = await send(
        client, "chat-e", _responded(request["toolCallId"], request["approvalId"], False), v=7
    )

    assert continued[1] == {"type": "tool-output-denied", "toolCallId": request["toolCallId"]}
    assert await node_names(client) == ["Ada Lovelace", "Analytical Engine"]


async def test_an_approval_response_must_name_the_call_it_approves(client: ApiClient) -> None:
    stream = await _pending_delete(client, "chat-f", 6)
    request = next(c for c in stream if c["type"] == "tool-approval-request")

    wrong_call = await send(
        client, "chat-f", _responded("call_other", request["approvalId"], True), status=404
    )
    elsewhere = await send(
        client, "chat-g", _responded(request["toolCallId"], request["approvalId"], True), status=404
    )

    for refused in (wrong_call, elsewhere):
        assert refused["error"]["code"] == "approval_not_found"
    assert await node_names(client) == ["Ada Lovelace", "Analytical Engine"]
    pending = (await client.get("/api/approvals")).json()["data"]
    assert [a["id"] for a in pending] == [request["approvalId"]]


async def test_v5_gets_the_pending_approval_as_a_data_part(client: ApiClient) -> None:
    stream = await _pending_delete(client, "chat-h", 5)

    kinds = {c["type"] for c in stream}
    assert "tool-approval-request" not in kinds
    data = next(c for c in stream if c["type"] == "data-approval")["data"]
    pending = (await client.get("/api/approvals")).json()["data"]
    assert data["approvalId"] == pending[0]["id"]


async def test_regenerate_answers_the_last_user_message_again(client: ApiClient) -> None:
    first = await send(client, "chat-i", user("hello"))
    body = {"id": "chat-i", "trigger": "regenerate-message", "messageId": first[0]["messageId"]}

    response = await client.post("/api/ui/chat?v=6", json=body)

    stream = chunks(response.text)
    assert stream[0]["messageId"] != first[0]["messageId"]
    assert stream[-1]["type"] == "finish"


async def test_resume_and_stop_without_an_active_run(client: ApiClient) -> None:
    assert (await client.get("/api/ui/chat/never-used/stream?v=6")).status_code == 204
    await send(client, "chat-j", user("hello"))
    assert (await client.get("/api/ui/chat/chat-j/stream?v=6")).status_code == 204
    assert (await client.post("/api/ui/chat/chat-j/stop")).status_code == 204
    missing = await client.post("/api/ui/chat/never-used/stop")
    assert missing.status_code == 404
    # Resume and stop never create a conversation.
    assert conversation_id_for("local", "never-used") not in {
        c["id"] for c in (await client.get("/api/conversations")).json()["data"]
    }


async def test_a_chat_id_is_the_callers_own_and_never_reaches_another_users(
    make_api: MakeApi, app_settings: Settings
) -> None:
    settings = app_settings.model_copy(
        update={"jwt_secret": SecretStr(HS_SECRET), "example_tools_enabled": True}
    )
    ann, bob = (bearer(hs_token(sub=u, roles=["user"])) for u in ("ann", "bob"))
    async with make_api(settings) as api:

        async def post(headers: dict[str, str], body: dict[str, Any]) -> Any:
            return await api.post("/api/ui/chat?v=6", json=body, headers=headers)

        turn = {"id": "same-name", "message": user("delete Ada Lovelace")}
        anns = chunks((await post(ann, turn)).text)
        bobs = chunks((await post(bob, turn)).text)
        ann_cid = anns[0]["messageMetadata"]["conversationId"]
        assert bobs[0]["messageMetadata"]["conversationId"] != ann_cid

        # Ann's conversation id named directly, and Ann's approval claimed in Bob's chat.
        direct = await post(bob, {"id": ann_cid, "message": user("hi")})
        assert direct.status_code == 404
        request = next(c for c in anns if c["type"] == "tool-approval-request")
        claim = _responded(request["toolCallId"], request["approvalId"], True)
        stolen = await post(bob, {"id": "same-name", "message": claim})
        assert stolen.status_code == 404
        assert stolen.json()["error"]["code"] == "approval_not_found"

        pending = (await api.get("/api/approvals", headers=ann)).json()["data"]
        assert [a["id"] for a in pending] == [request["approvalId"]]
        ann_messages = (await api.get(f"/api/conversations/{ann_cid}", headers=ann)).json()
        assert len(ann_messages["messages"]) == 2


async def test_a_message_with_an_already_decided_approval_decides_none_of_it(
    make_api: MakeApi, app_settings: Settings
) -> None:
    calls = [ScriptedToolCall(name="delete_node", args={"id": n}) for n in ("Ada", "Babbage")]
    script = Script(
        mode="rules",
        turns=[
            ScriptedTurn(match="delete", tool_calls=calls),
            ScriptedTurn(after_tool="delete_node", text="Done."),
        ],
    )
    settings = app_settings.model_copy(update={"example_tools_enabled": True})
    async with make_api(settings, providers={"scripted": ScriptedProvider(script)}) as client:
        stream = await send(client, "chat-k", user("delete both"))
        first, second = [c for c in stream if c["type"] == "tool-approval-request"]
        decided = await client.post(
            f"/api/approvals/{first['approvalId']}", json={"decision": "reject"}
        )
        assert decided.status_code == 200, decided.text

        # The pending one first: deciding in order would run it before meeting the other.
        both = _responded(second["toolCallId"], second["approvalId"], True)
        both["parts"].append(_responded(first["toolCallId"], first["approvalId"], True)["parts"][1])
        refused = await send(client, "chat-k", both, status=409)

        assert refused["error"]["code"] == "already_decided"
        pending = (await client.get("/api/approvals")).json()["data"]
        assert [a["id"] for a in pending] == [second["approvalId"]]
