"""The audit of mutating tool calls: who changed what through which tool, and how it ended.

Written in a transaction of its own, after the call, so a failed call is on record too.
The arguments are kept as a digest, never verbatim (they may hold what the user typed).
"""

from __future__ import annotations

import logging
from typing import Any

from pydantic import BaseModel

from app.domain.tooling import CallSite, ToolOutcome
from app.store.database import Database
from app.tools.base import ServerTool
from app.tools.pinning import args_hash

log = logging.getLogger("chat_bff.tools")


async def audit_call(
    db: Database, tool: ServerTool[Any], args: BaseModel, outcome: ToolOutcome, site: CallSite
) -> None:
    try:
        async with db.write() as tx:
            await tx.audit(
                actor_id=site.caller.user_id,
                action="tool.call",
                target_type="tool",
                target_id=tool.name,
                details={
                    "conversation_id": site.conversation_id,
                    "run_id": site.run_id,
                    "tool_call_id": site.tool_call_id,
                    "args_digest": args_hash(args.model_dump(mode="json")),
                    "outcome": outcome.status,
                },
            )
    except Exception:
        log.exception("could not audit a tool call", extra={"tool": tool.name})
