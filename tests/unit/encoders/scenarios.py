"""Whole runs as event logs, one per thing a run can do, for the wire encoders' golden tests.

Each scenario is the event log a real run writes, in order, so every encoder can be fed the
same runs. Between them they reach every event type, every run end status and every way a
tool call ends (server tool done or failed, client call parked or refused, an approval).
"""

from __future__ import annotations

from typing import Any

from app.domain.events import (
    ConfirmRequired,
    ErrorEvent,
    MessageEnd,
    PartUpdate,
    RunEnd,
    RunEvent,
    RunStart,
    RunStatus,
    StepReset,
    TextDeltaEvent,
    ThinkingDeltaEvent,
    ToolArgsDelta,
    ToolEnd,
    ToolError,
    ToolStart,
    UsageInfo,
)
from app.domain.messages import Message
from app.domain.parts import Elicitation, ToolData, ToolPart

RUN = "run_g1"
MESSAGE = "msg_g1"
CLIENT_TOOLS = frozenset({"get_weather", "pick_color"})
HELD_TOOLS = frozenset({"delete_node", "web__remove"})  # tools whose calls may pause


def start() -> RunStart:
    return RunStart(run_id=RUN, model="scripted", message_id=MESSAGE)


def text(delta: str) -> TextDeltaEvent:
    return TextDeltaEvent(run_id=RUN, message_id=MESSAGE, delta=delta)


def thinking(delta: str) -> ThinkingDeltaEvent:
    return ThinkingDeltaEvent(run_id=RUN, message_id=MESSAGE, delta=delta)


def tool(call_id: str, name: str, **data: Any) -> ToolPart:
    return ToolPart(
        id=call_id,
        data=ToolData(toolName=name, toolCallId=call_id, **{"status": "loading", **data}),
    )


def tool_start(call_id: str, name: str) -> ToolStart:
    return ToolStart(run_id=RUN, message_id=MESSAGE, part=tool(call_id, name))


def args(call_id: str, delta: str) -> ToolArgsDelta:
    return ToolArgsDelta(run_id=RUN, message_id=MESSAGE, tool_call_id=call_id, delta=delta)


def tool_end(part: ToolPart) -> ToolEnd:
    return ToolEnd(run_id=RUN, message_id=MESSAGE, part=part)


def tool_error(part: ToolPart, error: str) -> ToolError:
    return ToolError(run_id=RUN, message_id=MESSAGE, part=part, error=error)


def end(status: RunStatus, *, error: dict[str, Any] | None = None) -> list[RunEvent]:
    message = Message(id=MESSAGE, role="assistant", content=[])
    if status not in ("completed", "requires_action"):
        message.metadata = {"status": "incomplete"}
    usage = UsageInfo(input_tokens=21, output_tokens=8, model_calls=2)
    return [
        MessageEnd(run_id=RUN, message=message),
        RunEnd(run_id=RUN, status=status, usage=usage, error=error),
    ]


def step_reset() -> StepReset:
    """The call streaming so far failed and `claude` answers it again (failover)."""
    kept = Message(id=MESSAGE, role="assistant", content=[], metadata={"model": "claude"})
    return StepReset(
        run_id=RUN,
        message_id=MESSAGE,
        message=kept,
        model="claude",
        failed_model="gpt",
        code="provider_unavailable",
    )


def _weather_result() -> ToolPart:
    return tool("call_s1", "find_nodes", status="success", args={"q": "é"}, result={"nodes": []})


SCENARIOS: dict[str, list[RunEvent]] = {
    # Failover after the first byte: the failed call's text and tool call are taken back.
    "failover-mid-stream": [
        start(),
        text("Half an"),
        tool_start("call_f1", "find_nodes"),
        args("call_f1", '{"q": '),
        step_reset(),
        text("Whole answer."),
        *end("completed"),
    ],
    "text": [start(), text("Hel"), text("lo, "), text("wörld\n\nevent: x"), *end("completed")],
    "thinking-then-text": [
        start(),
        thinking("Let me "),
        thinking("think."),
        text("Answer."),
        thinking("More thought."),
        text("Second answer."),
        *end("completed"),
    ],
    "server-tools": [
        start(),
        text("Looking."),
        tool_start("call_s1", "find_nodes"),
        args("call_s1", '{"q": '),
        args("call_s1", '"é"}'),
        tool_end(_weather_result()),
        tool_start("call_s2", "read_node"),
        args("call_s2", '{"id": 7}'),
        tool_error(tool("call_s2", "read_node", status="error", args={"id": 7}), "Node 7 is gone."),
        text("Nothing there."),
        *end("completed"),
    ],
    "pinned-server-args": [
        start(),
        tool_start("call_p1", "find_nodes"),
        args("call_p1", '{"q":"x"}'),
        tool_end(
            tool(
                "call_p1",
                "find_nodes",
                status="success",
                args={"q": "x", "graph": "g1"},
                result="plain text result",
            )
        ),
        tool_start("call_p2", "touch_node"),
        tool_end(tool("call_p2", "touch_node", status="success", args={}, result=None)),
        *end("completed"),
    ],
    "client-tools-parked": [
        start(),
        text("Asking you."),
        tool_start("call_c1", "get_weather"),
        args("call_c1", '{"city":'),
        args("call_c1", '"Paris"}'),
        tool_start("call_c2", "pick_color"),
        ConfirmRequired(
            run_id=RUN,
            kind="client_tool",
            message_id=MESSAGE,
            part=tool("call_c1", "get_weather", status="waitingSubmission", args={"city": "Paris"}),
            summary="get_weather",
        ),
        ConfirmRequired(
            run_id=RUN,
            kind="client_tool",
            message_id=MESSAGE,
            part=tool("call_c2", "pick_color", status="waitingSubmission", args={"n": 2}),
            summary="pick_color",
        ),
        *end("requires_action"),
    ],
    "refused-client-call": [
        start(),
        tool_start("call_b1", "get_weather"),
        args("call_b1", "{nope"),
        tool_error(
            tool("call_b1", "get_weather", status="error", bodyContent="not valid JSON"),
            "not valid JSON",
        ),
        text("Sorry."),
        *end("completed"),
    ],
    "approval": [
        start(),
        tool_start("call_a1", "delete_node"),
        args("call_a1", '{"id":"n1"}'),
        ConfirmRequired(
            run_id=RUN,
            message_id=MESSAGE,
            approval_id="appr_1",
            part=tool("call_a1", "delete_node", status="waitingConfirmation", args={"id": "n1"}),
            summary="Delete n1",
            expires_at=1700000600.0,
        ),
        tool_start("call_a2", "delete_node"),
        ConfirmRequired(
            run_id=RUN,
            message_id=MESSAGE,
            part=tool("call_a2", "delete_node", status="waitingConfirmation", args={"id": "n2"}),
            summary="Delete n2",
        ),
        *end("requires_action"),
    ],
    "approval-decided": [
        start(),
        PartUpdate(
            run_id=RUN,
            message_id="msg_g0",
            cause="approval_approved",
            part=tool(
                "call_a1",
                "delete_node",
                status="success",
                args={"id": "n1"},
                result={"deleted": "n1"},
                approvalId="appr_1",
            ),
        ),
        PartUpdate(
            run_id=RUN,
            message_id="msg_g0",
            cause="approval_rejected",
            part=tool(
                "call_a2",
                "delete_node",
                status="cancelled",
                args={"id": "n2"},
                bodyContent="Rejected: not that one.",
                approvalId="appr_2",
            ),
        ),
        text("Deleted n1."),
        *end("completed"),
    ],
    "question-asked": [
        start(),
        text("Checking."),
        tool_start("call_q1", "web__remove"),
        args("call_q1", '{"path":"a.txt"}'),
        ConfirmRequired(
            run_id=RUN,
            kind="input",
            message_id=MESSAGE,
            part=tool(
                "call_q1",
                "web__remove",
                status="waitingSubmission",
                args={"path": "a.txt"},
                bodyContent="Remove a.txt?",
                elicitation=Elicitation(
                    id="eli_1",
                    message="Remove a.txt?",
                    requestedSchema={"type": "object", "properties": {"ok": {"type": "boolean"}}},
                ),
            ),
            summary="Remove a.txt?",
        ),
        *end("requires_action"),
    ],
    "held-call-refused": [
        start(),
        tool_start("call_h1", "delete_node"),
        args("call_h1", '{"nope":1}'),
        tool_error(
            tool("call_h1", "delete_node", status="error", args={"nope": 1}),
            "Unknown argument nope.",
        ),
        text("Let me fix that."),
        *end("completed"),
    ],
    "iteration-cap": [
        start(),
        tool_start("call_s1", "find_nodes"),
        tool_end(_weather_result()),
        text("Still"),
        *end("max_iterations"),
    ],
    "cancelled-mid-tool": [
        start(),
        thinking("Hmm"),
        text("Half"),
        tool_start("call_f1", "find_nodes"),
        args("call_f1", '{"q"'),
        tool_start("call_f2", "get_weather"),
        *end("cancelled"),
    ],
    "interrupted": [start(), text("Cut"), *end("interrupted")],
    "failed-after-error-event": [
        start(),
        text("Part"),
        ErrorEvent(run_id=RUN, code="rate_limited", message="Slow down.", retryable=True),
        *end("failed", error={"code": "rate_limited", "message": "Slow down."}),
    ],
    "failed-after-provider-error": [
        start(),
        ErrorEvent(run_id=RUN, code="provider_unavailable", message="Upstream down."),
        *end("failed"),
    ],
    "failed-without-error-event": [
        start(),
        *end("failed", error={"code": "internal_error", "message": "Boom."}),
    ],
    "failed-without-detail": [start(), *end("failed")],
    "events-for-an-unknown-call": [
        start(),
        args("call_zz", "{}"),
        tool_end(tool("call_zz", "find_nodes", status="success", args={}, result=None)),
        ConfirmRequired(
            run_id=RUN,
            message_id=MESSAGE,
            approval_id="appr_zz",
            part=tool("call_zz", "find_nodes", status="waitingConfirmation", args={}),
            summary="Find",
        ),
        *end("completed"),
    ],
}
