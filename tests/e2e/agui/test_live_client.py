"""AG-UI's own client, `@ag-ui/client` 1.0's `HttpAgent`, against a live chat-bff.

`live.mjs` runs the stock `HttpAgent` pointed at `/api/agui`; the client verifies the
event order itself (a run that breaks it fails in the client, not here) and keeps the
thread's messages. It plays: two text turns on one thread, then a third from another
device holding none of the history (it gets a MESSAGES_SNAPSHOT); a server tool turn (the
offline demo's add_node x2 + connect: calls and their results); a client tool round trip
(the run ends with the call pending, the application adds the tool message and runs
again); an approval (the run ends with an interrupt; the client itself refuses to run on
without answering it; a resume entry approves it and the tool runs once); an upstream
failure (RUN_ERROR); and a stop through `POST /api/agui/{threadId}/stop` mid-answer
(outcome cancelled, not an error); a retry after a dropped connection (the same input and
runId again: the first run replayed whole, no second turn) and the runId reused with
another input (another turn).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.api.ui_chat import conversation_id_for
from tests.e2e.agui.node import client_version, prepare, run_node
from tests.e2e.conftest import Launch, Service

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[3]
ANSWER = " ".join(f"word{i}" for i in range(160)) + "."
LONG = "tell me a long story"
ADA = (
    "add a Person node named Ada Lovelace and connect her to the Analytical Engine "
    "with a designed relation"
)


def _script(folder: Path) -> Path:
    """The offline demo's script, plus a client tool, a failure and a paced long answer."""
    script = json.loads((REPO / "app" / "providers" / "default_script.json").read_text())
    script["turns"][:0] = [
        {"after_tool": "pick_color", "text": "Teal it is."},
        {
            "match": "pick a color",
            "text": "Let me ask you.",
            "tool_calls": [{"name": "pick_color", "args": {"hint": "calm"}}],
        },
        {"match": "please fail", "error": {"status": 400, "message": "upstream refused"}},
        {"match": "long story", "text": ANSWER, "delay_ms": 30},
    ]
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
        HEARTBEAT_SECONDS="0.05",  # heartbeat comments between events: the client skips them
    )


@pytest.fixture(scope="module")
def seen(service: Service) -> dict[str, Any]:
    assert client_version().startswith("1.")
    result: dict[str, Any] = run_node(
        "live.mjs",
        service.base_url,
        ADA,
        LONG,
        timeout=180,
        context=f"--- service log ---\n{service.logs()[-3000:]}",
    )
    return result


def _stored(service: Service, thread_id: str) -> list[dict[str, Any]]:
    cid = conversation_id_for("local", thread_id)
    response = httpx.get(f"{service.base_url}/api/conversations/{cid}", timeout=10)
    assert response.status_code == 200, response.text
    messages: list[dict[str, Any]] = response.json()["messages"]
    return messages


def _clean(run: dict[str, Any]) -> None:
    """The client verified and applied the whole run, which ended as the wire says."""
    assert run["failed"] is None, run["failed"]
    assert run["types"][0] == "RUN_STARTED" and run["types"][-1] == "RUN_FINISHED"


def _texts(run: dict[str, Any]) -> list[str]:
    return [
        m["content"] for m in run["newMessages"] if m["role"] == "assistant" and m.get("content")
    ]


def test_text_turns_continue_one_durable_thread(service: Service, seen: dict[str, Any]) -> None:
    text = seen["text"]
    for run in (text["first"], text["second"]):
        _clean(run)
        assert run["finished"]["outcome"] == "success"
        assert _texts(run)[0].startswith("Hello! I am chat-bff's offline scripted model")
    stored = _stored(service, text["threadId"])
    assert [m["role"] for m in stored] == ["user", "assistant"] * 3  # a third from elsewhere
    # The client's assistant message is the stored one, id for id.
    assert text["second"]["messages"][-1]["id"] == stored[3]["id"]


def test_another_device_on_the_thread_gets_its_history(
    service: Service, seen: dict[str, Any]
) -> None:
    text = seen["text"]
    elsewhere = text["elsewhere"]
    _clean(elsewhere)
    assert elsewhere["types"][:2] == ["RUN_STARTED", "MESSAGES_SNAPSHOT"]
    stored = _stored(service, text["threadId"])
    assert [m["role"] for m in elsewhere["messages"]] == ["user", "assistant"] * 3
    assert [m["id"] for m in elsewhere["messages"]][:4] == [m["id"] for m in stored][:4]
    assert elsewhere["messages"][-1]["id"] == stored[-1]["id"]


def test_a_server_tool_turn_gives_the_client_calls_and_results(seen: dict[str, Any]) -> None:
    run = seen["tools"]["run"]
    _clean(run)
    calls = [c for m in run["messages"] if m["role"] == "assistant" for c in m.get("toolCalls", [])]
    assert [c["function"]["name"] for c in calls] == ["add_node", "add_node", "connect"]
    assert json.loads(calls[0]["function"]["arguments"])["name"] == "Ada Lovelace"
    results = {m["toolCallId"]: m for m in run["messages"] if m["role"] == "tool"}
    assert set(results) == {c["id"] for c in calls}
    assert json.loads(results[calls[2]["id"]]["content"])["relation"] == "designed"
    assert _texts(run)[-1].startswith("Done: Ada Lovelace (Person)")


def test_a_client_tool_round_trip(service: Service, seen: dict[str, Any]) -> None:
    trip = seen["clientTool"]
    asked, answered = trip["asked"], trip["answered"]
    _clean(asked)
    assert asked["finished"]["outcome"] == "success"
    assert asked["finished"]["pendingToolCallIds"] == [trip["call"]]
    assert "TOOL_CALL_RESULT" not in asked["types"]
    _clean(answered)
    assert _texts(answered) == ["Teal it is."]
    stored = _stored(service, trip["threadId"])
    [tool] = [p for m in stored for p in m["content"] if p["type"] == "tool"]
    assert (tool["id"], tool["data"]["status"], tool["data"]["result"]) == (
        trip["call"],
        "success",
        "teal",
    )


def test_an_approval_is_an_interrupt_the_client_resumes(
    service: Service, seen: dict[str, Any]
) -> None:
    approval = seen["approval"]
    interrupted = approval["interrupted"]
    _clean(interrupted)
    assert interrupted["finished"]["outcome"] == "interrupt"
    [interrupt] = interrupted["pendingInterrupts"]
    assert interrupt["reason"] == "confirmation" and approval["expired"] == [False]
    # The client itself refuses to run the thread on without an answer.
    assert "pending interrupt" in approval["unanswered"]["failed"]
    resumed = approval["resumed"]
    _clean(resumed)
    assert resumed["types"][:2] == ["RUN_STARTED", "TOOL_CALL_RESULT"]
    assert resumed["pendingInterrupts"] == []
    [result] = [m for m in resumed["newMessages"] if m["role"] == "tool"]
    assert result["toolCallId"] == interrupt["toolCallId"]
    assert json.loads(result["content"])["name"] == "Ada Lovelace"
    decided = httpx.get(f"{service.base_url}/api/approvals/{interrupt['id']}", timeout=10).json()
    assert (decided["status"], decided["outcome"]) == ("approved", "success")


def test_an_upstream_failure_is_run_error(seen: dict[str, Any]) -> None:
    run = seen["error"]["run"]
    assert run["types"][0] == "RUN_STARTED" and run["types"][-1] == "RUN_ERROR"
    assert "upstream refused" in run["runError"]["message"]
    assert run["runError"]["code"] == "provider_error"
    assert run["failed"] is None  # a clean end the client verified, reported to onRunErrorEvent


def test_stop_ends_the_run_cancelled_not_failed(service: Service, seen: dict[str, Any]) -> None:
    cancel = seen["cancel"]
    run = cancel["run"]
    _clean(run)
    assert run["finished"]["outcome"] == "cancelled"
    assert (cancel["stop"]["status"], cancel["stop"]["body"]["status"]) == (200, "cancelled")
    [said] = _texts(run)
    assert 0 < len(said) < len(ANSWER) and ANSWER.startswith(said)
    stored = _stored(service, cancel["threadId"])[-1]
    assert ANSWER.startswith(stored["content"][0]["data"]["text"])
    assert stored["metadata"]["status"] == "incomplete"


def test_a_retried_input_reattaches_to_its_run(service: Service, seen: dict[str, Any]) -> None:
    retry = seen["retry"]
    dropped, retried = retry["dropped"], retry["retried"]
    assert dropped["types"][0] == "RUN_STARTED" and "RUN_FINISHED" not in dropped["types"]
    # The same input again: the first run from its start, whole, not a second turn.
    _clean(retried)
    assert retried["finished"]["outcome"] == "success"
    assert _texts(retried) == [ANSWER]
    # The same runId with another input is another turn: the retry stored nothing.
    _clean(retry["reused"])
    assert retry["reused"]["finished"]["outcome"] == "success"
    stored = _stored(service, retry["threadId"])
    assert [m["role"] for m in stored] == ["user", "assistant", "user", "assistant"]
    assert retried["messages"][-1]["id"] == stored[1]["id"]
