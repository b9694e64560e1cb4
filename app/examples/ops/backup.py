"""An example long-running tool: a database export that takes as long as it is told.

It shows how a deployer declares a tool that outlives a turn (`long_running=True`): the
turn ends with its card `loading`, the export runs on as a background job, and when it
is done the conversation continues in a new run that reads its result. `resumable=True`
says a restart may simply run it again. A module of its own, so it is loaded on its own:
`TOOL_MODULES=["app.examples.ops.backup"]`.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

from pydantic import Field

from app.tools.base import ServerTool, ToolArgs, ToolContext
from app.tools.registry import ToolRegistry


class ExportArgs(ToolArgs):
    database: str = Field(default="main", description="The database to export.")
    seconds: float = Field(
        default=45.0, ge=0, le=3600, description="How long the export takes (a stand-in)."
    )


async def export_database(args: ExportArgs, ctx: ToolContext) -> dict[str, Any]:
    await asyncio.sleep(args.seconds)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    return {
        "database": args.database,
        "archive": f"s3://backups/{args.database}/{stamp}.sql.gz",
        "took_seconds": args.seconds,
    }


EXPORT = ServerTool(
    name="export_database",
    description="Export a database to a compressed archive. Takes minutes: the result "
    "arrives later, in a new message.",
    args_model=ExportArgs,
    handler=export_database,
    long_running=True,
    resumable=True,
    keywords=("export", "backup", "dump", "экспорт", "бэкап", "выгрузка"),
)


def register(registry: ToolRegistry) -> None:
    registry.register(EXPORT)
