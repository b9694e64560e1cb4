"""End to end through a real uvicorn process, OpenAI behind it (the fake upstream): the
request bodies AIKit's GenUI reference chat sends (`{messages, tools, tool_choice}`, its
`approval_request` card tool) meet a server tool that needs a human. The pause answers
the card as a call of `approval_request`; the answer (`role: tool`, `{approved: true}`)
runs the tool and the model is called again with the server call and its real result,
as the vendor's history rules want it (an assistant `tool_calls` turn, then its `tool`
message)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from tests.e2e.conftest import Launch, Service, openai_backed
from tests.fakes.openai_upstream import Completion, FakeOpenAIUpstream, ToolCall

pytestmark = pytest.mark.e2e

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
SYSTEM = {"role": "system", "content": "You are a UI assistant integrated into a chat app."}
USER = {"role": "user", "content": "Delete the node Ada."}


@pytest.fixture(scope="module")
def service(module_launch: Launch, module_upstream: FakeOpenAIUpstream) -> Service:
    return module_launch(**openai_backed(module_upstream.base_url, EXAMPLE_TOOLS_ENABLED="true"))


@pytest.fixture
async def http(service: Service) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=service.base_url, timeout=10) as client:
        yield client


async def _turn(http: httpx.AsyncClient, messages: list[dict[str, Any]]) -> dict[str, Any]:
    body = {"messages": messages, "tools": [APPROVAL_REQUEST], "tool_choice": "auto"}
    response = await http.post("/api/chat", json=body)
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


async def test_a_genui_chat_approves_a_server_tool_and_the_model_reads_what_ran(
    http: httpx.AsyncClient, module_upstream: FakeOpenAIUpstream
) -> None:
    module_upstream.enqueue(
        Completion(tool_calls=[ToolCall("delete_node", {"id": "Ada"}, id="call_del")]),
        Completion(text="Nothing named Ada was there."),
    )

    paused = await _turn(http, [SYSTEM, USER])

    choice = paused["choices"][0]
    assert choice["finish_reason"] == "requires_action"
    [card] = choice["message"]["tool_calls"]
    assert (card["id"], card["function"]["name"]) == ("call_del", "approval_request")
    assert json.loads(card["function"]["arguments"])["summary"]

    # What the reference chat sends once the user clicks Approve on its card.
    decided: list[dict[str, Any]] = [
        SYSTEM,
        USER,
        {"role": "assistant", "content": None, "tool_calls": [card]},
        {
            "role": "tool",
            "tool_call_id": card["id"],
            "content": json.dumps({"approved": True, "auditText": "Approved in the client UI."}),
        },
    ]
    done = await _turn(http, decided)

    assert done["choices"][0]["finish_reason"] == "stop"
    assert done["choices"][0]["message"]["content"] == "Nothing named Ada was there."
    second = module_upstream.request_bodies()[-1]["messages"]
    calls = [m for m in second if m["role"] == "assistant" and m.get("tool_calls")]
    assert [c["function"]["name"] for c in calls[-1]["tool_calls"]] == ["delete_node"]
    result = next(m for m in second if m["role"] == "tool" and m["tool_call_id"] == "call_del")
    # The tool really ran (its own answer: there is no such node), not the card's result.
    assert "No node with the id or name 'Ada'" in result["content"]
    again = await http.post("/api/chat", json={"messages": decided, "tools": [APPROVAL_REQUEST]})
    assert again.status_code == 409
    assert again.json()["error"]["code"] == "already_decided"
