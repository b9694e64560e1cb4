"""The composition of the server tool runtime: identity forwarding, approvals' expiry, and
the background jobs that `long_running` calls become. A part of the composition root
(`app.container`), kept in a module of its own so each stays one readable page."""

from __future__ import annotations

import logging
import socket
import uuid

from app.auth.forwarding import Forwarder
from app.runs.background import BackgroundResults
from app.runs.bus import Bus
from app.runs.job_stops import JobStops
from app.runs.turns import Runs
from app.settings import Settings
from app.store.database import Database
from app.toolruntime.background import BackgroundJobs
from app.toolruntime.runtime import ServerToolRuntime
from app.tools.catalog import ToolCatalog

log = logging.getLogger("chat_bff")


def build_tool_runtime(
    settings: Settings, catalog: ToolCatalog, db: Database
) -> tuple[ServerToolRuntime, BackgroundJobs]:
    """The runtime every server tool call goes through, and the background jobs it hands
    its `long_running` calls to (it runs their handlers), under the caps."""
    runtime = ServerToolRuntime(
        catalog,
        db,
        default_timeout=settings.tool_timeout_seconds,
        approval_ttl_seconds=settings.approval_ttl_seconds,
        forwarder=Forwarder(
            secret=settings.forward_token_secret,
            issuer=settings.forward_token_issuer,
            ttl_seconds=settings.forward_token_ttl_seconds,
            allow_bearer=settings.forward_bearer_tokens,
        ),
        background_timeout=settings.background_tool_timeout_seconds,
    )
    background = BackgroundJobs(
        db,
        catalog,
        instance_id=f"{socket.gethostname()}:{uuid.uuid4().hex[:12]}",
        per_user=settings.background_tools_per_user,
        total=settings.background_tools_total,
        lease_seconds=settings.run_lease_seconds,
    )
    background.runner = runtime.execute
    runtime.background = background
    return runtime, background


async def start_background(
    background: BackgroundJobs, runs: Runs, db: Database, settings: Settings, bus: Bus
) -> BackgroundJobs:
    """Results continue their conversations through `runs`; a cancel reaches the instance
    running the job through a shared bus; then what dead processes left is resumed or
    failed, and this instance keeps its leases."""
    # A busy conversation is waited for as long as its run may last.
    wait = settings.run_timeout_seconds + settings.run_lease_seconds
    background.deliver = BackgroundResults(runs, db, wait_seconds=wait).deliver
    if bus.shared:
        await JobStops(bus, background).start()
    recovered = await background.start_keeping()
    if recovered:
        log.warning("recovered background jobs a stopped process left", extra={"jobs": recovered})
    return background
