"""The body of `POST /api/agui`: AG-UI's `RunAgentInput`, as the OpenAPI document shows it.

The document describes the envelope with our own field descriptions; the protocol
package's own model (`ag_ui.core.RunAgentInput`) then reads it strictly (`to_protocol`),
so what the route runs on is exactly AG-UI 1.0's input, messages discriminated by role.
"""

from __future__ import annotations

from typing import Any

from ag_ui.core import RunAgentInput
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from app.domain.errors import InvalidRequest

MAX_MESSAGES = 10_000


class AguiRunInput(BaseModel):
    """AG-UI 1.0 `RunAgentInput` (what `HttpAgent.runAgent` posts)."""

    model_config = ConfigDict(
        extra="allow",
        json_schema_extra={
            "examples": [
                {
                    "threadId": "thread-1",
                    "runId": "run-1",
                    "messages": [{"id": "u1", "role": "user", "content": "Hi"}],
                    "tools": [],
                    "context": [],
                    "forwardedProps": {},
                }
            ]
        },
    )
    threadId: str = Field(
        min_length=1,
        max_length=256,
        description="The thread: a durable conversation of the caller (a `conv_...` id "
        "names one as it is).",
    )
    runId: str = Field(min_length=1, max_length=256, description="The client's run id.")
    messages: list[dict[str, Any]] = Field(
        max_length=MAX_MESSAGES, description="The client's history; only what is new is read."
    )
    tools: list[dict[str, Any]] | None = Field(
        default=None, description="Client tools `{name, description, parameters}`."
    )
    context: list[dict[str, Any]] | None = Field(
        default=None, description="`{description, value}` entries: untrusted, capped."
    )
    forwardedProps: Any | None = Field(
        default=None, description="`{model}` picks the model; the rest is not read."
    )
    resume: list[dict[str, Any]] | None = Field(
        default=None,
        description="Answers to the interrupts of the previous run: `{interruptId, status: "
        "resolved|cancelled, payload: {approved, reason?}}`.",
    )
    state: Any | None = Field(default=None, description="Not read.")

    def to_protocol(self) -> RunAgentInput:
        try:
            return RunAgentInput.model_validate(self.model_dump(exclude_none=True))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise InvalidRequest(
                f"Not an AG-UI RunAgentInput: {where}: {first['msg']}", param=where or None
            ) from None
