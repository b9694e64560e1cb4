"""Every recorded Vercel stream (tests/fixtures/encoders/vercel-v<major>/) is accepted by
the real client of its major: each chunk passes `ai`'s zod chunk schema (through
`DefaultChatTransport`'s response parsing) and the whole stream passes `readUIMessageStream`
with `terminateOnError`, which throws on a delta without its start, a tool chunk for an
unknown call, or an unknown chunk type. The message it builds is checked too."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.vercel.node import MAJORS, prepare, run_node
from tests.unit.encoders.test_golden_streams import GOLDEN

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module", params=MAJORS)
def replayed(request: pytest.FixtureRequest) -> tuple[int, dict[str, Any]]:
    prepare()
    major: int = request.param
    files = sorted(str(p) for p in (GOLDEN / f"vercel-v{major}").glob("*.sse"))
    assert files
    return major, run_node("replay.mjs", str(major), *files)


def test_every_recorded_stream_reads_cleanly_except_failed_runs(
    replayed: tuple[int, dict[str, Any]],
) -> None:
    _, results = replayed
    for name, result in results.items():
        if name.startswith("failed-"):
            # A failed run's `error` chunk is what the client raises, with our message.
            assert not result["ok"] and result["error"], name
        else:
            assert result["ok"], (name, result.get("error"))


def test_the_client_assembles_the_text_and_tool_parts(
    replayed: tuple[int, dict[str, Any]],
) -> None:
    _, results = replayed
    text = results["text"]["message"]
    assert text["id"] == "msg_g1"
    assert "".join(p["text"] for p in text["parts"] if p["type"] == "text") == (
        "Hello, wörld\n\nevent: x"
    )
    tools = [p for p in results["server-tools"]["message"]["parts"] if "toolCallId" in p]
    assert [(p["type"], p["toolName"], p["state"]) for p in tools] == [
        ("dynamic-tool", "find_nodes", "output-available"),
        ("dynamic-tool", "read_node", "output-error"),
    ]
    assert tools[0]["input"] == {"q": "é"} and tools[0]["output"] == {"nodes": []}


def test_a_pending_approval_is_an_approval_request_from_v6(
    replayed: tuple[int, dict[str, Any]],
) -> None:
    major, results = replayed
    parts = results["approval"]["message"]["parts"]
    first = next(p for p in parts if p.get("toolCallId") == "call_a1")
    if major >= 6:
        assert first["state"] == "approval-requested"
        assert first["approval"] == {"id": "appr_1"}
    else:
        assert first["state"] == "input-available"
        [data] = [p for p in parts if p["type"] == "data-approval"]
        assert data["data"]["approvalId"] == "appr_1"


def test_a_continuation_settles_the_calls_the_client_holds(
    replayed: tuple[int, dict[str, Any]],
) -> None:
    major, results = replayed
    parts = results["continuation-after-approvals"]["message"]["parts"]
    states = {p["toolCallId"]: p["state"] for p in parts if "toolCallId" in p}
    denied = "output-denied" if major >= 6 else "output-error"
    assert states == {"call_a1": "output-available", "call_a2": denied, "call_a3": "output-error"}
    assert results["cancelled-mid-tool"]["ok"]


def test_a_failover_mid_stream_leaves_v7_only_the_replacement(
    replayed: tuple[int, dict[str, Any]],
) -> None:
    major, results = replayed
    message = results["failover-mid-stream"]["message"]
    text = "".join(p["text"] for p in message["parts"] if p["type"] == "text")
    assert message["metadata"]["model"] == "claude"
    if major >= 7:  # `reset-step` dropped the failed call's text and tool call
        assert text == "Whole answer."
        assert not [p for p in message["parts"] if "toolCallId" in p]
    else:  # no way to retract: the replacement follows as a step of its own
        assert text == "Half anWhole answer."
        [call] = [p for p in message["parts"] if "toolCallId" in p]
        assert call["state"] == "output-error"
