"""A client tool's call shown as a submission request, read back as the call it is.

With `client_tool_items: "submission_request"` our answer shows a client tool call the
client must answer as an `mcp_submission_request` item `{id: call id, name, arguments,
server_label: "client"}` (see `app.api.encoders.responses_tools`). A client that sends
its history back (`input += response.output`) then answers it with a
`function_call_output` item whose `call_id` is that id: read here as the `function_call`
it stands for, so the output folds into it exactly as it would into a `function_call`.
A server tool's question (`server_label` anything else) is left as it came.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

CLIENT_LABEL = "client"  # the `server_label` of a client call asked as a submission


def as_function_call(item: Mapping[str, Any]) -> Mapping[str, Any]:
    """The `function_call` item a client call's submission request stands for; any other
    item unchanged."""
    if item.get("type") != "mcp_submission_request" or item.get("server_label") != CLIENT_LABEL:
        return item
    return {
        "type": "function_call",
        "call_id": item.get("id"),
        "name": item.get("name"),
        "arguments": item.get("arguments") or "",
    }
