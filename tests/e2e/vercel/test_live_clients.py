"""The Vercel AI SDK's own chat client of `ai` v5, v6 and v7 against a live chat-bff.

`live.mjs` runs `AbstractChat` (the core `useChat` wraps, with its state kept in memory
instead of React) over the stock `DefaultChatTransport` pointed at `/api/ui/chat?v=<major>`,
and records the chunk types of every response the transport parses (its zod schema
refuses unknown chunks; the stream processor throws on a delta without its start). Per
major it plays: a text turn; a server tool turn (the offline demo's add_node x2 + connect);
an approval turn (v6/v7: the client's `addToolApprovalResponse` with
`sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses` decides the
stored approval and the turn continues; v5: the approval arrives as a `data-approval`
part); a resume mid-stream (the tab drops after some text, a reloaded tab's
`resumeStream()` replays the active run from its start and follows it: the text appears
once, complete); and stop (`POST {api}/{chatId}/stop`: the open stream ends with `abort`,
the chat is `ready` without an error, and a resume then gets 204).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.conftest import Launch, Service
from tests.e2e.vercel.node import MAJORS, prepare, run_node

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[3]
ANSWER = " ".join(f"word{i}" for i in range(160)) + "."
LONG = "tell me a long story"
ADA = (
    "add a Person node named Ada Lovelace and connect her to the Analytical Engine "
    "with a designed relation"
)


def _script(folder: Path) -> Path:
    """The offline demo's script, plus a long answer paced to be cut mid-stream."""
    script = json.loads((REPO / "app" / "providers" / "default_script.json").read_text())
    script["turns"].insert(0, {"match": "long story", "text": ANSWER, "delay_ms": 30})
    path = folder / "script.json"
    path.write_text(json.dumps(script))
    return path


@pytest.fixture(scope="module")
def service(module_launch: Launch, tmp_path_factory: pytest.TempPathFactory) -> Service:
    prepare()
    return module_launch(
        EXAMPLE_TOOLS_ENABLED="true",
        SCRIPTED_SCRIPT=str(_script(tmp_path_factory.mktemp("script"))),
        DEFAULT_MODEL="scripted",
        # Heartbeat comments every 50 ms interleave with the chunks: the clients skip them.
        HEARTBEAT_SECONDS="0.05",
    )


@pytest.fixture(scope="module", params=MAJORS)
def played(request: pytest.FixtureRequest, service: Service) -> tuple[int, dict[str, Any]]:
    major: int = request.param
    seen = run_node(
        "live.mjs",
        str(major),
        service.base_url,
        LONG,
        ADA,
        timeout=180,
        context=f"--- service log ---\n{service.logs()[-3000:]}",
    )
    return major, seen


def _get(service: Service, path: str) -> Any:
    response = httpx.get(f"{service.base_url}{path}", timeout=10)
    assert response.status_code == 200, response.text
    return response.json()


def _assistant(chat: dict[str, Any]) -> dict[str, Any]:
    last: dict[str, Any] = chat["messages"][-1]
    assert last["role"] == "assistant"
    return last


def _text(message: dict[str, Any]) -> str:
    return "".join(p["text"] for p in message["parts"] if p["type"] == "text")


def _clean(chat: dict[str, Any]) -> None:
    """The chat ended ready, without an error, every response ending as the wire says."""
    assert chat["status"] == "ready" and chat["error"] is None, chat["error"]
    for response in chat["responses"]:
        assert response[0] == "start"
        assert "error" not in response


def test_a_text_turn_is_the_stored_answer(service: Service, played: tuple[int, Any]) -> None:
    _, seen = played
    chat = seen["text"]
    _clean(chat)
    answer = _assistant(chat)
    assert _text(answer).startswith("Hello! I am chat-bff's offline scripted model")
    assert chat["responses"][0][-1] == "finish"
    # The client's message is the durable conversation's message, id for id.
    cid = answer["metadata"]["conversationId"]
    stored = _get(service, f"/api/conversations/{cid}")["messages"]
    assert stored[-1]["id"] == answer["id"]
    assert stored[-1]["content"][0]["data"]["text"] == _text(answer)
    assert answer["metadata"]["usage"]["totalTokens"] > 0


def test_a_server_tool_turn_shows_finished_tool_parts(played: tuple[int, Any]) -> None:
    _, seen = played
    chat = seen["tools"]
    _clean(chat)
    tools = [p for p in _assistant(chat)["parts"] if p["type"] == "dynamic-tool"]
    assert [(p["toolName"], p["state"]) for p in tools] == [
        ("add_node", "output-available"),
        ("add_node", "output-available"),
        ("connect", "output-available"),
    ]
    assert tools[0]["input"]["name"] == "Ada Lovelace"
    assert tools[2]["output"]["relation"] == "designed"
    assert all(p["providerExecuted"] for p in tools)


def test_an_approval_is_decided_by_the_clients_response_from_v6(
    service: Service, played: tuple[int, Any]
) -> None:
    major, seen = played
    chat = seen["approval"]
    _clean(chat)
    [asked] = [p for p in seen["approval"]["asked"]["parts"] if p["type"] == "dynamic-tool"]
    assert asked["toolName"] == "delete_node"
    if major < 6:
        assert asked["state"] == "input-available"
        [data] = [p for p in seen["approval"]["asked"]["parts"] if p["type"] == "data-approval"]
        pending = _get(service, f"/api/approvals/{data['data']['approvalId']}")
        assert pending["status"] == "pending"
        assert pending["tool_call_id"] == asked["toolCallId"]
        return
    assert asked["state"] == "approval-requested"
    approval_id = asked["approval"]["id"]
    # The continuation settles the decided call first, then the next model call streams.
    continuation = chat["responses"][-1]
    assert continuation[:3] == ["start", "tool-output-available", "start-step"]
    [done] = [p for p in _assistant(chat)["parts"] if p["type"] == "dynamic-tool"]
    assert done["toolCallId"] == asked["toolCallId"]
    assert done["state"] == "output-available"
    assert done["output"]["name"] == "Ada Lovelace"
    decided = _get(service, f"/api/approvals/{approval_id}")
    assert (decided["status"], decided["outcome"]) == ("approved", "success")
    assert "deleted" in _text(_assistant(chat))


def test_a_reloaded_tab_resumes_mid_stream_without_duplicated_text(
    service: Service, played: tuple[int, Any]
) -> None:
    major, seen = played
    resume = seen["resume"]
    assert 0 < len(resume["seenBeforeDrop"]) < len(ANSWER)  # the drop was mid-stream
    reloaded = resume["reloaded"]
    _clean(reloaded)
    answer = _assistant(reloaded)
    assert [p["type"] for p in answer["parts"]] == ["step-start", "text"]
    assert _text(answer) == ANSWER
    # The first tab hanging up did not stop the run: the stored answer is whole.
    cid = answer["metadata"]["conversationId"]
    stored = _get(service, f"/api/conversations/{cid}")["messages"][-1]
    assert (stored["id"], stored["content"][0]["data"]["text"]) == (answer["id"], ANSWER)
    assert (stored.get("metadata") or {}).get("status") != "incomplete"
    if major == 7:
        # v7's transport declares resumed streams replays: the same tab may resume.
        same = seen["resumeSameTab"]
        _clean(same)
        assert [p["type"] for p in _assistant(same)["parts"]] == ["step-start", "text"]
        assert _text(_assistant(same)) == ANSWER


def test_stop_cancels_the_run_and_the_stream_ends_in_abort(
    service: Service, played: tuple[int, Any]
) -> None:
    _, seen = played
    stop = seen["stop"]
    _clean(stop)
    assert stop["responses"][0][-1] == "abort"
    assert (stop["stopStatus"], stop["stopBody"]["status"]) == (200, "cancelled")
    assert stop["resumeAfterStatus"] == 204
    answer = _assistant(stop)
    assert 0 < len(_text(answer)) < len(ANSWER)
    assert ANSWER.startswith(_text(answer))
    cid = answer["metadata"]["conversationId"]
    stored = _get(service, f"/api/conversations/{cid}")["messages"][-1]
    assert ANSWER.startswith(stored["content"][0]["data"]["text"])
    assert stored["metadata"]["status"] == "incomplete"
