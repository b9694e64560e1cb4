"""What a server tool call comes to, as the model reads it, and the site a stored call
runs at when a human lets it run later."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any, Protocol

from app.domain.identity import Caller
from app.domain.text import valid_json
from app.domain.tooling import CallSite, ToolOutcome
from app.tools.base import result_to_json

REJECTED = "rejected by the user"
# A call decided (approved, rejected) or answered whose outcome is still not stored this
# long past the tool's own time limit, counted from the decision or the answer, lost it
# (an outage between calling the tool and storing what it did): the request that called
# the tool has long stored its outcome or failed. Before that it may still be running.
LOST_AFTER = timedelta(seconds=60)


def error_outcome(message: str, *, args: dict[str, Any] | None = None, **extra: Any) -> ToolOutcome:
    """A failure the model reads and may recover from (never a crashed turn)."""
    return ToolOutcome(status="error", result={"error": message, **extra}, error=message, args=args)


def jsonable(value: Any) -> Any:
    """A handler's result as plain JSON values, whatever it returned, made valid text (a
    tool's result is text entering the service: see app.domain.text)."""
    return valid_json(json.loads(json.dumps(result_to_json(value), default=str)))


class CallPlace(Protocol):
    """Where a stored call (an approval, a proposal, a question, a job) was made."""

    @property
    def conversation_id(self) -> str | None: ...
    @property
    def run_id(self) -> str: ...
    @property
    def tool_call_id(self) -> str: ...


class StoredCall(CallPlace, Protocol):
    """What an approval and a proposal keep of the call they stand for."""

    @property
    def scope(self) -> dict[str, Any]: ...
    @property
    def model_id(self) -> str: ...


def stored_site(caller: Caller, call: StoredCall) -> CallSite:
    """The site of a stored call, run now on behalf of `caller` (its owner, deciding)."""
    return CallSite(
        caller=caller,
        scope={k: str(v) for k, v in call.scope.items()},
        conversation_id=call.conversation_id,
        run_id=call.run_id,
        tool_call_id=call.tool_call_id,
        model_id=call.model_id,
    )
