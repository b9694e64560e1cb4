"""A server asking the user mid-call (elicitation) as our `InputRequired`, and back.

On a 2026-07-28 connection a server that needs the user's input answers `tools/call`
with an `input_required` result: its questions (`input_requests`, keyed by the server)
and an opaque `request_state`. The call is then over as far as the connection goes: we
store one question with the key and the state (the runtime does, from `InputRequired`),
the part waits for the user, and the answer is sent with the same arguments, the
response under the server's key and the state echoed byte for byte, from whichever
instance receives it.

We ask one question at a time: a round asking several, asking for a URL visit, for a
sample of our model or for roots is refused as a tool failure the model reads.

Older servers (and servers on the older handshake) ask with an `elicitation/create`
request in the middle of the call. Holding that request open until a person answers
would pin the call to this process and connection (the answer may reach another
instance, after a restart, or never), and the SDK's callback does not say which of the
connection's calls asked. So we answer `decline` at once (`decline_mid_call`), with a
warning naming the server: the server hears a declined question, as if the user had
said no, and ends its call its own way; the model reads that result.
"""

from __future__ import annotations

import logging
from typing import Any

from mcp.client.session import ElicitationFnT
from mcp_types import (
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitRequestParams,
    ElicitResult,
    ErrorData,
    InputRequiredResult,
    InputResponses,
)

from app.tools.base import InputRequired, ToolFailure, UserAnswer

log = logging.getLogger("chat_bff.mcp")


def asked(server: str, result: InputRequiredResult) -> InputRequired | ToolFailure:
    """The server's one form question as `InputRequired`; anything else as a failure."""
    requests = result.input_requests or {}
    if len(requests) != 1:
        return ToolFailure(f"The MCP server `{server}` asked several questions at once.")
    ((key, request),) = requests.items()
    if not isinstance(request, ElicitRequest) or not isinstance(
        request.params, ElicitRequestFormParams
    ):
        return ToolFailure(f"The MCP server `{server}` asked for input this service cannot give.")
    schema = dict(request.params.requested_schema)
    state: dict[str, Any] = {"key": key, "request_state": result.request_state}
    return InputRequired(request.params.message, schema, state)


def answered(answer: UserAnswer | None) -> tuple[InputResponses | None, str | None]:
    """The responses and the request state a retried call carries (none on a first call)."""
    if answer is None:
        return None, None
    content = answer.content if answer.action == "accept" else None
    response = ElicitResult(action=answer.action, content=content)
    return {str(answer.state["key"]): response}, answer.state.get("request_state")


def decline_mid_call(server: str) -> ElicitationFnT:
    """The elicitation callback of a connection to `server`: decline, and say so."""

    async def decline(context: Any, params: ElicitRequestParams) -> ElicitResult | ErrorData:
        log.warning(
            "MCP server asked the user mid-call (elicitation/create, the older way); "
            "declined: only input_required results can wait for a person",
            extra={"mcp_server": server, "mode": getattr(params, "mode", None) or "form"},
        )
        return ElicitResult(action="decline")

    return decline
