"""A server asking the user mid-call (elicitation) as our `InputRequired`, and back.

On a 2026-07-28 connection a server that needs the user's input answers `tools/call`
with an `input_required` result: its questions (`input_requests`, keyed by the server)
and an opaque `request_state`. The call is then over as far as the connection goes: we
store one question with the key and the state (the runtime does, from `InputRequired`),
the part waits for the user, and the answer is sent with the same arguments, the
response under the server's key and the state echoed byte for byte, from whichever
instance receives it.

We ask one question at a time: a round asking several, asking for a URL visit, for a
sample of our model or for roots is refused as a tool failure the model reads. Older
servers ask with an `elicitation/create` request in the middle of the call, which would
pin the call to this process and connection until someone answers: we refuse those
(`refuse_mid_call`) and the server ends the call as it sees fit.
"""

from __future__ import annotations

from typing import Any

from mcp_types import (
    INVALID_REQUEST,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitRequestParams,
    ElicitResult,
    ErrorData,
    InputRequiredResult,
    InputResponses,
)

from app.tools.base import InputRequired, ToolFailure, UserAnswer


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


async def refuse_mid_call(context: Any, params: ElicitRequestParams) -> ElicitResult | ErrorData:
    return ErrorData(
        code=INVALID_REQUEST,
        message="This client answers elicitation only as an input_required result "
        "(protocol 2026-07-28); it cannot hold a call open for a person.",
    )
