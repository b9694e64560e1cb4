"""A long-running tool that is not resumable (a restart fails it), for background tests."""

from __future__ import annotations

import asyncio

from pydantic import Field

from app.tools.base import ServerTool, ToolArgs, ToolContext
from app.tools.registry import ToolRegistry


class ReportArgs(ToolArgs):
    seconds: float = Field(description="How long the report takes.")


async def report(args: ReportArgs, ctx: ToolContext) -> dict[str, float]:
    await asyncio.sleep(args.seconds)
    return {"rows": 42, "seconds": args.seconds}


def register(registry: ToolRegistry) -> None:
    registry.register(
        ServerTool(
            name="build_report",
            description="Build a long report.",
            args_model=ReportArgs,
            handler=report,
            long_running=True,
        )
    )
