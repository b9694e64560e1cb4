"""Tool calls on the Responses wire: `function_call` items for client tools, `mcp_call`
items for server tools, `mcp_approval_request` items for calls awaiting a human.

- client tools -> arguments stream as `function_call_arguments.delta`; the item is done
  when the call is parked for the client. A client call the loop refused (bad JSON
  arguments) is closed `incomplete` and left out of the final `output`.
- server tools -> `mcp_call.in_progress`, `mcp_call_arguments.delta`..., then
  `mcp_call.completed` or `mcp_call.failed` (AIKit: `loading`, then `success` / `error`).
- a call awaiting approval is closed with `status: calling` and `approval_request_id`,
  followed by an `mcp_approval_request` item (AIKit: `waitingConfirmation`). The client
  answers it with an `mcp_approval_response` input item (or `/api/approvals/{id}`); the
  response that continues the turn starts with the decided call as a finished `mcp_call`
  item (same id): `completed` with the tool's output, or `failed` when rejected or the
  tool failed. That is how OpenAI answers an approval too, and what a reloaded history
  needs to show the card finished rather than waiting.
"""

from __future__ import annotations

from typing import Any

from app.api.encoders.responses_frames import ResponsesFrames
from app.api.encoders.responses_objects import OutputItem, dumps, result_text
from app.api.schemas.responses_events import (
    FunctionCallArgumentsDelta,
    FunctionCallArgumentsDone,
    McpCallArgumentsDelta,
    McpCallArgumentsDone,
    McpCallCompleted,
    McpCallFailed,
    McpCallInProgress,
)
from app.domain.events import (
    ConfirmRequired,
    PartUpdate,
    ToolArgsDelta,
    ToolEnd,
    ToolError,
    ToolStart,
)
from app.domain.parts import ToolPart

_DECIDED = frozenset({"approval_approved", "approval_rejected", "input_answered"})


ToolEvent = ToolStart | ToolArgsDelta | ConfirmRequired | PartUpdate | ToolEnd | ToolError


class ResponsesToolItems(ResponsesFrames):
    """The tool-call half of `ResponsesEncoder`."""

    def _tool_event(self, event: ToolEvent) -> bytes:
        if isinstance(event, ToolStart):
            return self._tool_start(event.part)
        if isinstance(event, ToolArgsDelta):
            return self._args_delta(event.tool_call_id, event.delta)
        if isinstance(event, ConfirmRequired):
            return self._confirm(event)
        if isinstance(event, PartUpdate):
            return self._decided(event)
        if isinstance(event, ToolEnd):
            return self._tool_done(event.part, error=None)
        return self._tool_done(event.part, error=event.error)

    def _tool_start(self, part: ToolPart) -> bytes:
        out = self._close_text("completed") + self._close_reasoning("completed")
        name = part.data.toolName
        if name in self.client_tools:
            item, added = self._open("function_call", f"fc_{part.id}", name=name, call_id=part.id)
            self._tools[part.id] = item
            return out + added
        item, added = self._open("mcp_call", part.id, name=name)
        self._tools[part.id] = item
        started = McpCallInProgress(
            item_id=item.id, output_index=item.index, sequence_number=self._next()
        )
        return out + added + self._emit(started)

    def _args_delta(self, call_id: str, delta: str) -> bytes:
        item = self._tools.get(call_id)
        if item is None:
            return b""
        item.text += delta
        kind = FunctionCallArgumentsDelta if item.kind == "function_call" else McpCallArgumentsDelta
        return self._emit(
            kind(
                item_id=item.id, output_index=item.index, delta=delta, sequence_number=self._next()
            )
        )

    def _finish_args(self, item: OutputItem, part: ToolPart | None) -> bytes:
        """Settle the final arguments text (a server tool's may be pinned or edited)."""
        args = part.data.args if part is not None else None
        if args is not None and (item.kind == "mcp_call" or not item.text.strip()):
            item.text = dumps(args)
        kind = FunctionCallArgumentsDone if item.kind == "function_call" else McpCallArgumentsDone
        return self._emit(
            kind(
                item_id=item.id,
                output_index=item.index,
                arguments=item.text,
                sequence_number=self._next(),
            )
        )

    def _tool_done(self, part: ToolPart, *, error: str | None) -> bytes:
        item = self._tools.pop(part.id, None)
        if item is None:  # a call that was never announced (defensive: nothing to close)
            return b""
        out = self._finish_args(item, part)
        where: dict[str, Any] = {"item_id": item.id, "output_index": item.index}
        if item.kind == "function_call":
            # Only a refused call ends here (a client tool never runs on the server).
            item.status = "completed" if error is None else "incomplete"
            item.dropped = error is not None
            return out + self._done(item)
        if error is None:
            item.status, item.output = "completed", result_text(part.data.result)
            completed = McpCallCompleted(**where, sequence_number=self._next())
            return out + self._emit(completed) + self._done(item)
        item.status, item.output = "failed", error
        item.error = {"type": "mcp_tool_execution_error", "content": error}
        failed = McpCallFailed(**where, sequence_number=self._next())
        return out + self._emit(failed) + self._done(item)

    def _confirm(self, event: ConfirmRequired) -> bytes:
        item = self._tools.pop(event.part.id, None)
        if item is None:
            return b""
        out = self._finish_args(item, event.part)
        if item.kind == "function_call":
            item.status = "completed"
            return out + self._done(item)
        item.status, item.approval_request_id = "calling", event.approval_id
        out += self._done(item)
        if event.approval_id is None:
            return out
        request, added = self._open(
            "mcp_approval_request", event.approval_id, name=item.name, text=item.text
        )
        return out + added + self._done(request)

    def _decided(self, event: PartUpdate) -> bytes:
        """A server call whose approval a human just decided: its finished `mcp_call`.
        Other updates (proposals, client tools) are of an earlier message: no item here."""
        part = event.part
        if event.cause not in _DECIDED or part.data.toolName in self.client_tools:
            return b""
        if part.data.status not in ("success", "error", "cancelled"):
            return b""
        out = self._tool_start(part)
        error = None
        if part.data.status != "success":
            error = part.data.bodyContent or "The tool call was not run."
        return out + self._tool_done(part, error=error)
