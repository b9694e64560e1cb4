"""The Vercel AI SDK UI message stream, per client major: recorded streams for every
scenario run, and the rules a strict `ai` client enforces, checked on each of them.

The recorded streams live in `tests/fixtures/encoders/vercel-v<major>/`; record them again
with `UPDATE_GOLDEN_STREAMS=1` after an intended change and review the diff. That every
recorded chunk passes the real `ai@5/6/7` zod schemas and stream processor is proven in
`tests/e2e/vercel/` (it needs Node).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from app.api.encoders.vercel import CLIENT_MAJORS, ClientMajor, Decided, VercelEncoder
from app.domain.events import RunEvent
from tests.unit.encoders.scenarios import CLIENT_TOOLS, SCENARIOS, end, start, text, tool
from tests.unit.encoders.test_golden_streams import GOLDEN, check_golden, encode_in_batches

# Chunk types each major's schema knows (from the `ai` packages' uiMessageChunkSchema).
_COMMON = {
    "start", "start-step", "text-start", "text-delta", "text-end", "reasoning-start",
    "reasoning-delta", "reasoning-end", "tool-input-start", "tool-input-delta",
    "tool-input-available", "tool-input-error", "tool-output-available", "tool-output-error",
    "finish-step", "finish", "abort", "error", "message-metadata",
}  # fmt: skip
KNOWN: dict[int, set[str]] = {
    5: _COMMON,
    6: _COMMON | {"tool-approval-request", "tool-output-denied"},
    7: _COMMON | {"tool-approval-request", "tool-output-denied", "reset-step"},
}


def _decided_run() -> list[RunEvent]:
    return [start(), text("Done."), *end("completed")]


DECIDED = (
    Decided(tool("call_a1", "delete_node", status="success", result={"ok": True}), True),
    Decided(tool("call_a2", "delete_node", status="error", bodyContent="rejected"), False),
    Decided(tool("call_a3", "delete_node", status="error", bodyContent="Node gone."), True),
)


def encoder(major: ClientMajor, **options: Any) -> VercelEncoder:
    return VercelEncoder(major=major, client_tools=CLIENT_TOOLS, **options)


def chunks(written: bytes) -> list[dict[str, Any]]:
    *frames, done = written.decode().removesuffix("\n\n").split("\n\n")
    assert done == "data: [DONE]"
    return [json.loads(f.removeprefix("data: ")) for f in frames]


def check_client_rules(stream: list[dict[str, Any]], major: int) -> None:
    """What `processUIMessageStream` enforces: known types, deltas inside their block,
    tool chunks for announced calls, outputs after the input, one end."""
    texts: set[str] = set()
    reasoning: set[str] = set()
    calls: set[str] = set()
    assert stream[0]["type"] == "start"
    for body in stream:
        kind = body["type"]
        assert kind in KNOWN[major] or kind.startswith("data-"), kind
        if kind in ("text-start", "reasoning-start"):
            (texts if kind == "text-start" else reasoning).add(body["id"])
        elif kind in ("text-delta", "text-end"):
            assert body["id"] in texts
        elif kind in ("reasoning-delta", "reasoning-end"):
            assert body["id"] in reasoning
        elif kind == "tool-input-start":
            calls.add(body["toolCallId"])
        elif kind == "reset-step":  # the step's blocks and calls are gone
            texts, reasoning, calls = set(), set(), set()
        elif kind.startswith("tool-"):
            assert body["toolCallId"] in calls, body
        if kind.endswith("-end"):
            (texts if kind == "text-end" else reasoning).discard(body["id"])
    assert not texts and not reasoning, "a block was left open"
    assert stream[-1]["type"] in ("finish", "abort")


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
@pytest.mark.parametrize("major", CLIENT_MAJORS)
def test_each_major_writes_the_recorded_stream(major: ClientMajor, scenario: str) -> None:
    written = encode_in_batches(encoder(major).encode, SCENARIOS[scenario])
    check_golden(GOLDEN / f"vercel-v{major}" / f"{scenario}.sse", written)


@pytest.mark.parametrize("major", CLIENT_MAJORS)
def test_a_continuation_settles_the_decided_calls_first(major: ClientMajor) -> None:
    enc = encoder(major, continues=True, decided=DECIDED)
    written = encode_in_batches(enc.encode, _decided_run())
    check_golden(GOLDEN / f"vercel-v{major}" / "continuation-after-approvals.sse", written)
    stream = chunks(written)
    assert "messageId" not in stream[0]
    settled = [(c["type"], c["toolCallId"]) for c in stream[1:4]]
    assert stream[4] == {"type": "start-step"}
    denied = "tool-output-denied" if major >= 6 else "tool-output-error"
    assert settled == [
        ("tool-output-available", "call_a1"),
        (denied, "call_a2"),
        ("tool-output-error", "call_a3"),
    ]


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
@pytest.mark.parametrize("major", CLIENT_MAJORS)
def test_every_stream_keeps_the_rules_a_strict_client_enforces(
    major: ClientMajor, scenario: str
) -> None:
    stream = chunks(encode_in_batches(encoder(major).encode, SCENARIOS[scenario]))
    # A continuation's outputs name calls the client holds from the earlier stream.
    check_client_rules(stream, major)


@pytest.mark.parametrize("major", CLIENT_MAJORS)
def test_a_pending_approval_reaches_each_major_in_its_own_words(major: ClientMajor) -> None:
    stream = chunks(encode_in_batches(encoder(major).encode, SCENARIOS["approval"]))
    kinds = [c["type"] for c in stream]
    if major >= 6:
        request = next(c for c in stream if c["type"] == "tool-approval-request")
        assert request == {
            "type": "tool-approval-request",
            "approvalId": "appr_1",
            "toolCallId": "call_a1",
        }
        assert not any(k.startswith("data-") for k in kinds)
    else:
        assert "tool-approval-request" not in kinds
        data = next(c for c in stream if c["type"] == "data-approval")
        assert data["data"]["approvalId"] == "appr_1"
        assert data["data"]["toolCallId"] == "call_a1"
    assert stream[-1]["finishReason"] == "tool-calls"


@pytest.mark.parametrize("major", CLIENT_MAJORS)
def test_a_cancelled_run_ends_in_abort_not_error(major: ClientMajor) -> None:
    stream = chunks(encode_in_batches(encoder(major).encode, SCENARIOS["cancelled-mid-tool"]))
    kinds = [c["type"] for c in stream]
    assert kinds[-1] == "abort"
    assert "error" not in kinds and "finish" not in kinds
    assert ("reason" in stream[-1]) == (major >= 6)


def test_usage_rides_in_the_finish_chunks_message_metadata() -> None:
    stream = chunks(encode_in_batches(encoder(6).encode, SCENARIOS["text"]))
    assert stream[-1]["messageMetadata"]["usage"] == {
        "inputTokens": 21,
        "outputTokens": 8,
        "totalTokens": 29,
    }


def test_content_after_tool_results_opens_a_new_step() -> None:
    stream = chunks(encode_in_batches(encoder(7).encode, SCENARIOS["server-tools"]))
    kinds = [c["type"] for c in stream]
    assert kinds.count("start-step") == kinds.count("finish-step") == 3


def test_nothing_is_written_after_the_run_ended() -> None:
    enc = encoder(6)
    first = encode_in_batches(enc.encode, SCENARIOS["text"])
    assert first.endswith(b"data: [DONE]\n\n")
    assert encode_in_batches(enc.encode, [text("late")]) == b""


def test_every_recorded_stream_is_on_disk() -> None:
    """The e2e proof replays these files through the real clients: keep them complete."""
    for major in CLIENT_MAJORS:
        folder = Path(GOLDEN / f"vercel-v{major}")
        names = {p.stem for p in folder.glob("*.sse")}
        assert names >= set(SCENARIOS) | {"continuation-after-approvals"}
