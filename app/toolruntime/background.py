"""Background jobs: the calls of `long_running` tools, which outlive the turn that made them.

    start(tool, args, site)
      the caller's or the deployment's cap reached  -> error outcome (nothing is queued)
      otherwise a job row (running, this instance's lease), the handler started as a task
      outside any request                           -> BackgroundStarted: the turn ends
    the task ends   -> the row records the result (unless cancelled meanwhile) -> deliver
    cancel(owner, job_id)     -> row cancelled, task stopped, the cancellation delivered
    cancel_run(owner, run_id) -> the run's jobs cancelled (the run closes their parts)
    every lease/3   -> renew this instance's leases; stop tasks cancelled through another
                       instance; a dead process's running jobs are run again (a
                       `resumable` tool) or failed with a clear result; results that
                       never reached their conversation are delivered

`deliver` (wired by the container: `app.runs.background`) carries a result into the
conversation and continues it in a new run. The caps are counts of running rows, so they
hold across instances and restarts; this instance also serialises its own starts.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic import BaseModel

from app.domain.identity import Caller
from app.domain.tooling import BackgroundStarted, CallSite, ToolOutcome
from app.store.database import Database
from app.store.repos.jobs import JobRecord, JobRepo
from app.toolruntime.outcomes import error_outcome, stored_site
from app.tools.base import ServerTool, visible_args
from app.tools.catalog import ToolCatalog
from app.tools.pinning import InvalidArguments, pin_and_validate

log = logging.getLogger("chat_bff.tools")

Runner = Callable[[ServerTool[Any], BaseModel, CallSite], Awaitable[ToolOutcome]]
Deliver = Callable[[JobRecord], Awaitable[None]]

CANCELLED = "cancelled by the user"


def _now() -> datetime:
    return datetime.now(UTC)


def restart_message(tool_name: str) -> str:
    return (
        f"The service restarted while `{tool_name}` was running in the background; its "
        "result is lost. Run it again if it is still needed."
    )


class BackgroundJobs:
    def __init__(
        self,
        db: Database,
        catalog: ToolCatalog,
        *,
        instance_id: str,
        per_user: int,
        total: int,
        lease_seconds: float,
    ) -> None:
        self.db = db
        self.catalog = catalog
        self.instance_id = instance_id
        self.per_user = per_user
        self.total = total
        self.lease = timedelta(seconds=lease_seconds)
        # Set by the container: how a handler runs (the tool runtime's `execute`), and how
        # a result reaches its conversation.
        self.runner: Runner | None = None
        self.deliver: Deliver | None = None
        self._running: dict[str, asyncio.Task[None]] = {}
        self._delivering: set[str] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._starting = asyncio.Lock()
        self._keeper: asyncio.Task[None] | None = None

    # -- starting -------------------------------------------------------------------

    async def start(
        self, tool: ServerTool[Any], args: BaseModel, site: CallSite
    ) -> BackgroundStarted | ToolOutcome:
        shown = visible_args(tool, args.model_dump(mode="json"))
        summary = f"{tool.summary(args)}: running in the background"
        owner = site.caller.user_id
        async with self._starting, self.db.write() as tx:
            jobs = tx.jobs
            existing = await jobs.for_call(site.run_id, site.tool_call_id)
            if existing is not None:  # a replayed call: the same job answers
                return BackgroundStarted(existing.id, summary, shown)
            if await jobs.count_running(owner) >= self.per_user:
                return error_outcome(
                    f"You already have {self.per_user} background tasks running; `{tool.name}` "
                    "was not started. Try again when one of them has finished.",
                    args=shown,
                    code="background_limit",
                )
            if await jobs.count_running() >= self.total:
                return error_outcome(
                    f"The service is running as many background tasks as it allows; "
                    f"`{tool.name}` was not started. Try again later.",
                    args=shown,
                    code="background_limit",
                )
            job = await jobs.create(
                site,
                tool.name,
                args.model_dump(mode="json"),
                instance_id=self.instance_id,
                now=_now(),
            )
        self._spawn(job.id, tool, args, site)
        return BackgroundStarted(job.id, summary, shown)

    def _spawn(self, job_id: str, tool: ServerTool[Any], args: BaseModel, site: CallSite) -> None:
        task = asyncio.get_running_loop().create_task(
            self._run(job_id, tool, args, site), name=f"background job {job_id}"
        )
        self._running[job_id] = task
        self._keep_ref(task)

    def _keep_ref(self, task: asyncio.Task[None]) -> None:
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _run(
        self, job_id: str, tool: ServerTool[Any], args: BaseModel, site: CallSite
    ) -> None:
        assert self.runner is not None, "the container sets the runner"
        try:
            outcome = await self.runner(tool, args, site)
        except asyncio.CancelledError:
            # Cancelled (the end is recorded already) or the process is stopping: the row
            # stays `running`, its lease lapses, and the next start resumes or fails it.
            return
        finally:
            self._running.pop(job_id, None)
        status = "succeeded" if outcome.status == "success" else "failed"
        try:
            async with self.db.write() as tx:
                ended = await tx.jobs.finish(
                    job_id, status, result=outcome.result, error=outcome.error, now=_now()
                )
        except Exception:
            log.exception("could not store a background job's result", extra={"job_id": job_id})
            return
        if ended:
            await self._deliver(job_id)

    # -- delivering -----------------------------------------------------------------

    def _deliver_later(self, job_id: str) -> None:
        if job_id not in self._delivering:
            self._keep_ref(asyncio.get_running_loop().create_task(self._deliver(job_id)))

    async def _deliver(self, job_id: str) -> None:
        """Carry the ended job's result into its conversation, then mark it delivered; a
        failure leaves it undelivered, for the sweep to try again."""
        if self.deliver is None or job_id in self._delivering:
            return
        self._delivering.add(job_id)
        try:
            async with self.db.read() as tx:
                record = await tx.jobs.load(job_id)
            if record is None or record.delivered_at is not None:
                return
            await self.deliver(record)
            async with self.db.write() as tx:
                await tx.jobs.delivered(job_id, _now())
        except Exception:
            log.exception("could not deliver a background job's result", extra={"job_id": job_id})
        finally:
            self._delivering.discard(job_id)

    # -- reading and stopping -------------------------------------------------------

    async def of_owner(self, owner_id: str, *, limit: int = 50) -> list[JobRecord]:
        async with self.db.read() as tx:
            return await tx.jobs.of_owner(owner_id, limit=limit)

    async def get(self, owner_id: str, job_id: str) -> JobRecord:
        async with self.db.read() as tx:
            return await tx.jobs.get(owner_id, job_id)

    async def cancel(self, owner_id: str, job_id: str) -> JobRecord:
        """Stop a job and tell its conversation (the model reads that it was cancelled);
        harmless when it already ended. Another owner's id is 404."""
        async with self.db.write() as tx:
            await tx.jobs.get(owner_id, job_id)
            ended = await self._record_cancel(tx.jobs, job_id)
        if ended:
            self._stop(job_id)
            self._deliver_later(job_id)
        return await self.get(owner_id, job_id)

    async def cancel_run(self, owner_id: str, run_id: str) -> None:
        """The run that started them was cancelled: so are its jobs (the run closes their
        parts as cancelled itself, so nothing is delivered)."""
        now = _now()
        async with self.db.write() as tx:
            for job_id in await tx.jobs.running_of_run(owner_id, run_id):
                if await self._record_cancel(tx.jobs, job_id):
                    await tx.jobs.delivered(job_id, now)
                    self._stop(job_id)

    @staticmethod
    async def _record_cancel(jobs: JobRepo, job_id: str) -> bool:
        ended: bool = await jobs.finish(
            job_id, "cancelled", result={"error": CANCELLED}, error=CANCELLED, now=_now()
        )
        return ended

    def _stop(self, job_id: str) -> None:
        task = self._running.pop(job_id, None)
        if task is not None:
            task.cancel()

    # -- leases and recovery --------------------------------------------------------

    async def start_keeping(self) -> int:
        """Recover what dead processes left, then keep leases; returns jobs recovered."""
        recovered = await self.recover()
        self._keeper = asyncio.get_running_loop().create_task(
            self._keep(), name="background job leases"
        )
        return recovered

    async def _keep(self) -> None:
        interval = max(self.lease.total_seconds() / 3, 0.05)
        while True:
            await asyncio.sleep(interval)
            try:
                async with self.db.write() as tx:
                    gone = await tx.jobs.renew(list(self._running), self.instance_id, _now())
                for job_id in gone:  # cancelled through another instance
                    self._stop(job_id)
                await self.recover()
            except Exception:
                log.exception("could not renew background job leases")

    async def recover(self) -> int:
        """Resume or fail the running jobs of dead processes; deliver stranded results."""
        before = _now() - self.lease
        async with self.db.read() as tx:
            stale = await tx.jobs.stale(before=before, exclude=list(self._running))
            stranded = await tx.jobs.undelivered(finished_before=before)
        for job in stale:
            await self._recover_one(job, before)
        for job in stranded:
            self._deliver_later(job.id)
        return len(stale)

    async def _recover_one(self, job: JobRecord, before: datetime) -> None:
        caller = Caller(user_id=job.owner_id, roles=job.roles)
        tool = self.catalog.permitted(job.tool_name, caller, job.model_id)
        if tool is not None and tool.resumable:
            try:
                args, _ = pin_and_validate(tool, job.args, job.scope)
            except InvalidArguments:
                args = None
            if args is not None:
                async with self.db.write() as tx:
                    taken = await tx.jobs.take_over(
                        job.id, self.instance_id, before=before, now=_now()
                    )
                if taken:
                    log.warning("resumed a background job", extra={"job_id": job.id})
                    self._spawn(job.id, tool, args, stored_site(caller, job))
                return
        message = restart_message(job.tool_name)
        async with self.db.write() as tx:
            ended = await tx.jobs.finish(
                job.id, "failed", result={"error": message}, error=message, now=_now()
            )
        if ended:
            log.warning("failed a background job a dead process left", extra={"job_id": job.id})
            self._deliver_later(job.id)

    async def shutdown(self, grace_seconds: float) -> None:
        """Stop the keeper and the tasks; running rows are resumed or failed at the next
        start (by this deployment's next process or another instance)."""
        if self._keeper is not None:
            self._keeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._keeper
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=grace_seconds)
