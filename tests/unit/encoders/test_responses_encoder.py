"""The Responses encoder alone (pure: run events in, frames out): how tool calls and runs end.

Every frame is also validated strictly against the openai SDK's `ResponseStreamEvent`.
"""

from __future__ import annotations

import json
from typing import Any

from openai.types.responses import ResponseStreamEvent
from pydantic import TypeAdapter

from app.api.encoders.responses import ResponsesEncoder
from app.domain.events import ConfirmRequired, ErrorEvent, RunEvent, SequencedEvent
from tests.unit.encoders.scenarios import (
    MESSAGE,
    RUN,
    args,
    end,
    start,
    text,
    tool,
    tool_end,
    tool_error,
    tool_start,
)

EVENTS: TypeAdapter[ResponseStreamEvent] = TypeAdapter(ResponseStreamEvent)


def _frames(encoder: ResponsesEncoder, events: list[RunEvent]) -> list[dict[str, Any]]:
    batch = [SequencedEvent(seq=n, event=e) for n, e in enumerate(events, start=1)]
    raw = encoder.encode(batch).decode()
    frames = []
    for block in raw.split("\n\n"):
        if not block:
            continue
        name, data = block.split("\n")
        body = json.loads(data.removeprefix("data: "))
        assert name == f"event: {body['type']}"
        EVENTS.validate_python(body)
        frames.append(body)
    return frames


def _encoder(
    client_tools: frozenset[str] = frozenset(), held_tools: frozenset[str] = frozenset()
) -> ResponsesEncoder:
    return ResponsesEncoder(
        response_id="resp_r1",
        model="scripted",
        created_at=1,
        client_tools=client_tools,
        held_tools=held_tools,
    )


def test_a_refused_client_call_is_closed_and_left_out_of_the_output() -> None:
    bad = tool("call_b", "get_weather", status="error", bodyContent="not valid JSON")
    frames = _frames(
        _encoder(frozenset({"get_weather"})),
        [
            start(),
            tool_start("call_b", "get_weather"),
            args("call_b", "{nope"),
            tool_error(bad, "not valid JSON"),
            text("Sorry."),
            *end("completed"),
        ],
    )
    done = [f["item"] for f in frames if f["type"] == "response.output_item.done"]
    assert (done[0]["type"], done[0]["status"]) == ("function_call", "incomplete")
    final = frames[-1]["response"]
    assert [i["type"] for i in final["output"]] == ["message"]


def test_an_approval_closes_the_call_as_calling_and_adds_an_approval_request() -> None:
    waiting = tool("call_d", "delete_node", status="waitingConfirmation", args={"id": "n1"})
    frames = _frames(
        _encoder(),
        [
            start(),
            tool_start("call_d", "delete_node"),
            ConfirmRequired(
                run_id=RUN,
                message_id=MESSAGE,
                approval_id="appr_1",
                part=waiting,
                summary="Delete n1",
            ),
            *end("requires_action"),
        ],
    )
    final = frames[-1]
    assert final["type"] == "response.completed"
    call, request = final["response"]["output"]
    assert (call["type"], call["status"], call["approval_request_id"]) == (
        "mcp_call",
        "calling",
        "appr_1",
    )
    assert (request["type"], request["id"], json.loads(request["arguments"])) == (
        "mcp_approval_request",
        "appr_1",
        {"id": "n1"},
    )


def test_a_cancelled_run_closes_open_items_and_ends_incomplete() -> None:
    frames = _frames(
        _encoder(),
        [start(), text("Half"), tool_start("call_f", "find_nodes"), *end("cancelled")],
    )
    added = [f for f in frames if f["type"] == "response.output_item.added"]
    done = [f for f in frames if f["type"] == "response.output_item.done"]
    assert len(added) == len(done) == 2
    assert frames[-1]["type"] == "response.incomplete"
    assert frames[-1]["response"]["status"] == "cancelled"
    message, call = frames[-1]["response"]["output"]
    assert (message["status"], message["content"][0]["text"]) == ("completed", "Half")
    assert call["status"] == "incomplete"


def test_a_run_interrupted_by_a_dead_process_ends_failed_with_its_error() -> None:
    # What start-up recovery stores for a run whose process died (no `error` event).
    lost = {"code": "interrupted", "message": "The service stopped during this run."}
    frames = _frames(_encoder(), [start(), text("Half"), *end("interrupted", error=lost)])

    assert frames[-1]["type"] == "response.failed"
    response = frames[-1]["response"]
    assert (response["status"], response["incomplete_details"]) == ("failed", None)
    assert response["error"] == {
        "code": "server_error",
        "message": "The service stopped during this run.",
        "type": "interrupted",
    }
    assert response["output"][0]["content"][0]["text"] == "Half"


def test_a_run_interrupted_by_a_shutdown_ends_failed_after_its_error_event() -> None:
    said = ErrorEvent(run_id=RUN, code="shutting_down", message="Send it again.", retryable=True)
    frames = _frames(_encoder(), [start(), text("Half"), said, *end("interrupted")])

    types = [f["type"] for f in frames]
    assert types.index("error") < types.index("response.failed") == len(types) - 1
    response = frames[-1]["response"]
    assert response["status"] == "failed"
    assert (response["error"]["code"], response["error"]["message"]) == (
        "server_error",
        "Send it again.",
    )


def test_text_after_tools_is_a_new_message_item() -> None:
    ok = tool("call_f", "find_nodes", status="success", args={}, result={"nodes": []})
    frames = _frames(
        _encoder(),
        [
            start(),
            text("Looking."),
            tool_start("call_f", "find_nodes"),
            tool_end(ok),
            text("Nothing."),
            *end("completed"),
        ],
    )
    output = frames[-1]["response"]["output"]
    assert [i["type"] for i in output] == ["message", "mcp_call", "message"]
    assert output[1]["output"] == '{"nodes":[]}'
    assert [f["sequence_number"] for f in frames] == list(range(len(frames)))


def test_a_call_that_may_wait_for_a_person_shows_only_its_approval_request() -> None:
    """AIKit would show an announced `mcp_call` as a spinning card beside the approval."""
    waiting = tool("call_d", "delete_node", status="waitingConfirmation", args={"id": "n1"})
    held = _encoder(held_tools=frozenset({"delete_node"}))
    frames = _frames(
        held,
        [
            start(),
            tool_start("call_d", "delete_node"),
            args("call_d", '{"id":"n1"}'),
            ConfirmRequired(
                run_id=RUN, message_id=MESSAGE, approval_id="appr_1", part=waiting, summary="x"
            ),
            *end("requires_action"),
        ],
    )
    assert not any(f["type"].startswith("response.mcp_call") for f in frames)
    added = [f["item"] for f in frames if f["type"] == "response.output_item.added"]
    assert [(i["type"], i["id"]) for i in added] == [("mcp_approval_request", "appr_1")]
    [request] = frames[-1]["response"]["output"]
    assert json.loads(request["arguments"]) == {"id": "n1"}


def test_a_held_call_that_ends_without_waiting_is_announced_with_its_outcome() -> None:
    refused = tool("call_d", "delete_node", status="error", args={"nope": 1})
    held = _encoder(held_tools=frozenset({"delete_node"}))
    frames = _frames(
        held,
        [
            start(),
            tool_start("call_d", "delete_node"),
            args("call_d", '{"nope":1}'),
            tool_error(refused, "Unknown argument nope."),
            *end("completed"),
        ],
    )
    kinds = [f["type"].removeprefix("response.") for f in frames[2:-1]]
    assert kinds == [
        "output_item.added",
        "mcp_call.in_progress",
        "mcp_call_arguments.done",
        "mcp_call.failed",
        "output_item.done",
    ]
    [call] = frames[-1]["response"]["output"]
    assert (call["type"], call["status"], call["error"]["content"]) == (
        "mcp_call",
        "failed",
        "Unknown argument nope.",
    )
