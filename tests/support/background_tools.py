"""Long-running tools for background tests: one not resumable (a restart fails it), and
one a human approves first (policy `confirm`), one approved that finishes when the test lets
it, one that says when its task was stopped."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from pydantic import Field

from app.tools.base import ServerTool, ToolArgs, ToolContext
from app.tools.registry import ToolRegistry


class ReportArgs(ToolArgs):
    seconds: float = Field(description="How long the report takes.")


async def report(args: ReportArgs, ctx: ToolContext) -> dict[str, float]:
    await asyncio.sleep(args.seconds)
    return {"rows": 42, "seconds": args.seconds}


class GateArgs(ToolArgs):
    gate: str = Field(description="The file whose appearance lets the call finish.")


async def gated(args: GateArgs, ctx: ToolContext) -> dict[str, str]:
    """Finishes once the file `gate` exists: a test decides when the result arrives."""
    while not Path(args.gate).exists():
        await asyncio.sleep(0.02)
    return {"archived": "logs"}


async def watched(args: ReportArgs, ctx: ToolContext) -> dict[str, float]:
    """`report`, leaving a file named by the call's id in $TEST_STOPPED_JOBS_DIR when its
    task is stopped: how a test of real processes sees that a cancel reached the task."""
    try:
        return await report(args, ctx)
    except asyncio.CancelledError:
        folder = os.environ.get("TEST_STOPPED_JOBS_DIR")
        if folder:
            Path(folder, ctx.site.tool_call_id).write_text("stopped")
        raise


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
    registry.register(
        ServerTool(
            name="archive_logs",
            description="Archive the logs (asks first).",
            args_model=ReportArgs,
            handler=report,
            long_running=True,
            policy="confirm",
        )
    )
    registry.register(
        ServerTool(
            name="gated_archive",
            description="Archive the logs once allowed (asks first).",
            args_model=GateArgs,
            handler=gated,
            long_running=True,
            policy="confirm",
        )
    )
    registry.register(
        ServerTool(
            name="watched_report",
            description="Build a long report (says when it was stopped).",
            args_model=ReportArgs,
            handler=watched,
            long_running=True,
        )
    )
