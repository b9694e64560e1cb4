"""The interrupts an AG-UI run ends with when a server tool needs a person (the outcome
`interrupt` of `RUN_FINISHED`); a `resume` entry of the next input answers each by id
(`app.api.agui` reads them).

- a pending approval: `id` our approval id, `reason` "confirmation", `message` the
  summary, `expiresAt` ISO 8601, `responseSchema` for `{approved, reason?}`.
- a question a server tool asks mid-call (an MCP elicitation): `id` the question's id,
  `reason` "input_required" (MCP's name for such a result), `message` the question,
  `responseSchema` for `{action: accept|decline|cancel, content?}` where `content` is
  the tool's `requestedSchema`. A `cancelled` resume entry answers `cancel`.
Both name the `toolCallId`; `metadata.chatBff.toolName` names the tool.

A tool may ask again after an answer (its server wants more): no run starts then, and
the answering input's stream is a run that only interrupts again (`asked_again_frames`).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from ag_ui.core import (
    PROTOCOL_VERSION,
    Interrupt,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunStartedEvent,
)
from ag_ui.encoder import EventEncoder

from app.domain.events import ConfirmRequired
from app.domain.parts import ToolPart

OURS = "chatBff"  # our key in an event's `metadata` (`ag-ui` is the protocol's)
CONFIRMATION = "confirmation"
INPUT_REQUIRED = "input_required"
APPROVAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "approved": {"type": "boolean"},
        "reason": {"type": "string", "maxLength": 4000},
    },
    "required": ["approved"],
}


def approval_interrupt(event: ConfirmRequired, approval_id: str) -> Interrupt:
    return Interrupt(
        id=approval_id,
        reason=CONFIRMATION,
        message=event.summary,
        tool_call_id=event.part.id,
        expires_at=_iso(event.expires_at),
        response_schema=APPROVAL_SCHEMA,
        metadata={OURS: {"toolName": event.part.data.toolName}},
    )


def input_interrupt(part: ToolPart) -> Interrupt | None:
    """The question a waiting part holds as an interrupt (None when it holds none)."""
    asked = part.data.elicitation
    if asked is None:
        return None
    schema = {
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": ["accept", "decline", "cancel"]},
            "content": asked.requestedSchema,
        },
        "required": ["action"],
    }
    return Interrupt(
        id=asked.id,
        reason=INPUT_REQUIRED,
        message=asked.message,
        tool_call_id=part.id,
        response_schema=schema,
        metadata={OURS: {"toolName": part.data.toolName}},
    )


def asked_again_frames(thread_id: str, run_id: str, parts: list[ToolPart]) -> bytes:
    """`RUN_STARTED` then `RUN_FINISHED` interrupting with the parts' new questions."""
    interrupts = [i for i in (input_interrupt(p) for p in parts) if i is not None]
    assert interrupts, "only parts that hold a question"
    encoder = EventEncoder()
    started = RunStartedEvent(thread_id=thread_id, run_id=run_id, protocol_version=PROTOCOL_VERSION)
    outcome = RunFinishedInterruptOutcome(interrupts=interrupts)
    finished = RunFinishedEvent(thread_id=thread_id, run_id=run_id, outcome=outcome)
    return (encoder.encode(started) + encoder.encode(finished)).encode()


def _iso(unix: float | None) -> str | None:
    if unix is None:
        return None
    return datetime.fromtimestamp(unix, tz=UTC).isoformat().replace("+00:00", "Z")
