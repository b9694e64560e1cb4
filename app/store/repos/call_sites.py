"""The columns every stored tool call shares (an approval, a proposal, a question, a
background job): whose call it was, where it was made, and the scope it was pinned to, so
the call can be run again later by whichever instance picks it up."""

from __future__ import annotations

from typing import Any

from app.domain.tooling import CallSite


def call_site_columns(site: CallSite) -> dict[str, Any]:
    """`owner_id`, `conversation_id`, `run_id`, `tool_call_id`, `scope`, `model_id`."""
    return {
        "owner_id": site.caller.user_id,
        "conversation_id": site.conversation_id,
        "run_id": site.run_id,
        "tool_call_id": site.tool_call_id,
        "scope": dict(site.scope),
        "model_id": site.model_id,
    }
