"""Tool calls on the Responses wire: `function_call` items for client tools, `mcp_call`
items for server tools, `mcp_approval_request` items for calls awaiting a human.

- client tools -> arguments stream as `function_call_arguments.delta`; the item is done
  when the call is parked for the client. With `client_submissions` (the request's
  `client_tool_items: "submission_request"`) a client call is held like a server call that
  may wait, and parked it is only an `mcp_submission_request` item (id = the call id,
  `server_label: "client"`; AIKit: `waitingSubmission`), answered by a
  `function_call_output` input item with that `call_id`. A client call the loop refused (bad JSON
  arguments) is closed `incomplete` and left out of the final `output`.
- server tools -> `mcp_call.in_progress`, `mcp_call_arguments.delta`..., then
  `mcp_call.completed` or `mcp_call.failed` (AIKit: `loading`, then `success` / `error`).
- a server tool whose policy asks a person first (`held_tools`, policy `confirm`) is held:
  nothing is written while the model streams it, because AIKit would show an announced
  `mcp_call` as a spinning card beside the approval. Paused, it is only an
  `mcp_approval_request` item (id = the approval id; AIKit: `waitingConfirmation`). Known
  to run or ended without pausing (a refused argument, a replayed answer), it is
  announced then as an `mcp_call` with its outcome. The client answers an approval with
  an `mcp_approval_response` input item (or `/api/approvals/{id}`); the response that
  continues the turn starts with the decided call as a finished `mcp_call` item (id = the
  call id, `approval_request_id` set): `completed` with the tool's output, or `failed`
  when rejected or the tool failed. That is how OpenAI answers an approval too, and what
  a reloaded history needs to show the card finished rather than waiting.
- a held call that stops to ask the user (an MCP server's elicitation) is only an
  `mcp_submission_request` item (id = the call id; AIKit: `waitingSubmission`), answered
  through `POST /api/conversations/{id}/submissions/{call id}`; the run that continues
  shows the answered call as a finished `mcp_call` with the same id.
- a server tool not held that still ends up waiting (an encoder built without the held
  names) is closed with `status: calling` and `approval_request_id`, then followed by its
  `mcp_approval_request` item.
"""

from __future__ import annotations

from typing import Any

from app.api.encoders.responses_frames import ResponsesFrames
from app.api.encoders.responses_objects import (
    CLIENT_LABEL,
    SERVER_LABEL,
    OutputItem,
    dumps,
    result_text,
)
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
        if name in self.client_tools and not self.client_submissions:
            return out + self._function_call(part.id, name)
        if name in self.held_tools or name in self.client_tools:  # no card until it is known
            self._held[part.id] = OutputItem(index=-1, kind="mcp_call", id=part.id, name=name)
            return out
        return out + self._announce(part.id, name)

    def _function_call(self, call_id: str, name: str, arguments: str = "") -> bytes:
        """A client tool's `function_call` item, added (AIKit: a `loading` card)."""
        item, added = self._open(
            "function_call", f"fc_{call_id}", name=name, call_id=call_id, text=arguments
        )
        self._tools[call_id] = item
        return added

    def _announce(self, call_id: str, name: str, arguments: str = "") -> bytes:
        """An `mcp_call` item added and in progress (AIKit: a `loading` card)."""
        item, added = self._open("mcp_call", call_id, name=name, text=arguments)
        self._tools[call_id] = item
        started = McpCallInProgress(
            item_id=item.id, output_index=item.index, sequence_number=self._next()
        )
        return added + self._emit(started)

    def _announce_held(self, call_id: str) -> bytes:
        """A held call now known to run (or to have ended): its `mcp_call` from here on."""
        held = self._held.pop(call_id, None)
        if held is None:
            return b""
        if held.name in self.client_tools:  # a client call that ended without being parked
            return self._function_call(call_id, held.name, held.text)
        return self._announce(call_id, held.name, held.text)

    def _args_delta(self, call_id: str, delta: str) -> bytes:
        held = self._held.get(call_id)
        if held is not None:
            held.text += delta
            return b""
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
        out = self._announce_held(part.id)
        item = self._tools.pop(part.id, None)
        if item is None:  # a call that was never announced (defensive: nothing to close)
            return out
        item.approval_request_id = part.data.approvalId
        out += self._finish_args(item, part)
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
        part = event.part
        held = self._held.pop(part.id, None)
        if held is not None and (
            event.approval_id is not None or event.kind == "input" or held.name in self.client_tools
        ):
            # Never announced: the request is the call's only card until it is answered.
            arguments = dumps(part.data.args) if part.data.args is not None else held.text
            if held.name in self.client_tools:  # `client_tool_items: submission_request`
                return self._submission_request(part, arguments, label=CLIENT_LABEL)
            if event.approval_id is not None:
                return self._approval_request(event.approval_id, held.name, arguments)
            return self._submission_request(part, arguments)
        out = b"" if held is None else self._announce(part.id, held.name, held.text)
        item = self._tools.pop(part.id, None)
        if item is None:
            return out
        out += self._finish_args(item, part)
        if item.kind == "function_call":
            item.status = "completed"
            return out + self._done(item)
        item.status, item.approval_request_id = "calling", event.approval_id
        out += self._done(item)
        if event.approval_id is None:
            return out
        return out + self._approval_request(event.approval_id, item.name, item.text)

    def _approval_request(self, approval_id: str, name: str, arguments: str) -> bytes:
        """An `mcp_approval_request` item (AIKit: `waitingConfirmation`), added and done."""
        request, added = self._open("mcp_approval_request", approval_id, name=name, text=arguments)
        return added + self._done(request)

    def _submission_request(
        self, part: ToolPart, arguments: str, label: str = SERVER_LABEL
    ) -> bytes:
        """An `mcp_submission_request` item (AIKit: `waitingSubmission`), added and done."""
        asked = part.data.elicitation
        request, added = self._open(
            "mcp_submission_request",
            part.id,
            name=part.data.toolName,
            text=arguments,
            label=label,
            question=asked.message if asked is not None else (part.data.bodyContent or ""),
            answer_schema=asked.requestedSchema if asked is not None else {},
        )
        return added + self._done(request)

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
