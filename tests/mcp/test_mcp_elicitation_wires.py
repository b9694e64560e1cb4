"""A server's question mid-call reaches the front-end wires too: AG-UI ends the run with
an interrupt of reason `input_required` that a `resume` entry answers (checked like the
submissions route), and the Vercel UI stream carries it as a `data-elicitation` part."""

from __future__ import annotations

from typing import Any

from app.api.ui_chat import conversation_id_for
from tests.api.test_agui import events
from tests.api.test_approvals import _ok
from tests.api.test_ui_chat import chunks
from tests.fakes.db import ApiClient
from tests.mcp.test_mcp_elicitation import ALICE, BOB, SCHEMA, client

__all__ = ["client"]


async def _agui(
    client: ApiClient,
    thread: str,
    *,
    status: int = 200,
    headers: dict[str, str] = ALICE,
    **extra: Any,
) -> Any:
    body = {
        "threadId": thread,
        "runId": f"run-{len(extra)}",
        "messages": [{"id": "u1", "role": "user", "content": "remove it"}],
        **extra,
    }
    response = await client.post("/api/agui", json=body, headers=headers)
    assert response.status_code == status, response.text
    return events(response.text) if status == 200 else response.json()


async def _asked(client: ApiClient, thread: str) -> dict[str, Any]:
    stream = await _agui(client, thread)
    outcome = stream[-1]["outcome"]
    assert outcome["type"] == "interrupt"
    [interrupt] = outcome["interrupts"]
    return dict(interrupt)


def _resume(interrupt: dict[str, Any], payload: Any = None, status: str = "resolved") -> Any:
    return [{"interruptId": interrupt["id"], "status": status, "payload": payload}]


async def test_agui_gets_the_question_as_an_interrupt_and_a_resume_entry_answers_it(
    client: ApiClient,
) -> None:
    interrupt = await _asked(client, "t-ask")

    assert interrupt["id"].startswith("elic_")
    assert interrupt["reason"] == "input_required"
    assert interrupt["message"] == "Remove a.txt? Say why."
    assert interrupt["responseSchema"]["properties"]["content"] == SCHEMA
    assert interrupt["metadata"]["chatBff"]["toolName"] == "web__remove"

    accept = {"action": "accept", "content": {"confirm": True, "reason": "old"}}
    continued = await _agui(client, "t-ask", resume=_resume(interrupt, accept))

    result = next(e for e in continued if e["type"] == "TOOL_CALL_RESULT")
    assert result["toolCallId"] == interrupt["toolCallId"]
    assert '"outcome":"removed"' in result["content"]
    assert continued[-1]["outcome"]["type"] == "success"
    texts = [e["delta"] for e in continued if e["type"] == "TEXT_MESSAGE_CONTENT"]
    assert "".join(texts) == "Done with the file."

    again = await _agui(client, "t-ask", resume=_resume(interrupt, accept), status=409)
    assert again["error"]["code"] == "already_answered"


async def test_agui_a_cancelled_entry_answers_cancel(client: ApiClient) -> None:
    interrupt = await _asked(client, "t-cancel")

    continued = await _agui(client, "t-cancel", resume=_resume(interrupt, status="cancelled"))

    result = next(e for e in continued if e["type"] == "TOOL_CALL_RESULT")
    assert "cancel" in result["content"]
    assert continued[-1]["outcome"]["type"] == "success"


async def test_agui_a_bad_answer_is_refused_and_the_question_stays_open(
    client: ApiClient,
) -> None:
    interrupt = await _asked(client, "t-bad")

    wrong = await _agui(
        client,
        "t-bad",
        resume=_resume(interrupt, {"action": "accept", "content": {"confirm": "yes"}}),
        status=422,
    )
    malformed = await _agui(client, "t-bad", resume=_resume(interrupt, {"ok": 1}), status=400)
    foreign = await _agui(
        client, "t-bad", resume=_resume(interrupt, {"action": "decline"}), status=404, headers=BOB
    )

    assert wrong["error"]["code"] == "invalid_submission"
    assert malformed["error"]["code"] == "invalid_request"
    assert foreign["error"]["code"] == "submission_not_found"
    declined = await _agui(client, "t-bad", resume=_resume(interrupt, {"action": "decline"}))
    assert declined[-1]["outcome"]["type"] == "success"


async def test_the_vercel_stream_carries_the_question_as_a_data_part(client: ApiClient) -> None:
    message = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "remove it"}]}
    body = {"id": "chat-ask", "messages": [message], "trigger": "submit-message"}
    for version in (5, 6, 7):
        response = await client.post(
            f"/api/ui/chat?v={version}", json={**body, "id": f"chat-ask-{version}"}, headers=ALICE
        )
        assert response.status_code == 200, response.text
        stream = chunks(response.text)
        [asked] = [c for c in stream if c["type"] == "data-elicitation"]
        assert asked["id"] == asked["data"]["elicitationId"]
        assert asked["data"]["toolName"] == "web__remove"
        assert asked["data"]["message"] == "Remove a.txt? Say why."
        assert asked["data"]["requestedSchema"] == SCHEMA
        assert stream[-1]["type"] == "finish"

    cid = stream[0]["messageMetadata"]["conversationId"]
    assert cid == conversation_id_for("alice", "chat-ask-7")
    answered = await _ok(
        await client.post(
            f"/api/conversations/{cid}/submissions/{asked['data']['toolCallId']}",
            json={"action": "accept", "content": {"confirm": True, "reason": "old"}},
            headers=ALICE,
        )
    )
    assert answered["part"]["data"]["status"] == "success"
