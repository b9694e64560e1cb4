"""Background jobs: the calls of `long_running` tools, which outlive the turn that made them.

    start(tool, args, site)
      the caller's or the deployment's cap reached  -> error outcome (nothing is queued)
      otherwise a job row (running, this instance's lease), the handler started as a task
      outside any request                           -> BackgroundStarted: the turn ends
    the task ends   -> the row records the result (unless cancelled meanwhile) -> deliver
    cancel(owner, job_id)     -> row cancelled, task stopped (on another instance: told
                                 through the shared bus), the cancellation delivered
    cancel_run(owner, run_id) -> the run's jobs cancelled (the run closes their parts)
    every lease/3   -> renew this instance's leases; stop tasks cancelled through another
                       instance; a dead process's running jobs are run again (a
                       `resumable` tool) or failed with a clear result; results that
                       never reached their conversation are delivered

`deliver` (wired by the container: `app.runs.background`) carries a result into the
conversation and continues it in a new run. The caps are counts of running rows taken
under a lock every instance's starts share (`JobRepo.lock_starts`), so they hold across
instances and restarts. In a stateless turn there is no conversation to continue: the
call's answer is a receipt naming the job, whose result the client fetches by its URL.
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
Tell = Callable[[str, str], Awaitable[None]]  # (instance id, job id)

CANCELLED = "cancelled by the user"


def _now() -> datetime:
    return datetime.now(UTC)


def job_url(job_id: str) -> str:
    return f"/api/background-jobs/{job_id}"


def receipt(tool_name: str, job_id: str, shown: dict[str, Any] | None) -> ToolOutcome:
    """A stateless turn's answer to a long-running call: it started, as this job. There
    is no conversation for its result to continue, so the client fetches it by the URL."""
    note = (
        f"`{tool_name}` is running in the background as job {job_id}. This chat is not "
        "stored, so its result will not come back here: the user can follow the job (and "
        "read its result) in the app."
    )
    result = {"status": "running", "job_id": job_id, "job_url": job_url(job_id), "note": note}
    return ToolOutcome(status="success", result=result, args=shown, job_id=job_id)


def restart_message(tool_name: str) -> str:
    return (
        f"The service restarted while `{tool_name}` was running in the background; its "
        "result is lost. Run it again if it is still needed."
    )


def token_lost_message(tool_name: str) -> str:
    return (
        f"The service restarted while `{tool_name}` was running in the background. It acts "
        "with the user's own sign-in token, which is never stored, so it could not survive "
        "the restart and the job could not be resumed. Run it again if it is still needed."
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
        # Tells the instance running a job to stop it (a shared bus; `app.runs.job_stops`).
        self.tell: Tell | None = None
        self._running: dict[str, asyncio.Task[None]] = {}
        self._delivering: set[str] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._keeper: asyncio.Task[None] | None = None

    # -- starting -------------------------------------------------------------------

    async def start(
        self, tool: ServerTool[Any], args: BaseModel, site: CallSite, *, launch: bool = True
    ) -> BackgroundStarted | ToolOutcome:
        """Start the call as a job. In a stateless turn (no conversation to continue) the
        answer is a receipt naming the job, which the model reads and the client follows
        on `/api/background-jobs/{id}`. `launch=False`: the caller calls `launch` once
        the call's part says it is loading (an approved call), so a quick result cannot
        arrive before it."""
        shown = visible_args(tool, args.model_dump(mode="json"))
        summary = f"{tool.summary(args)}: running in the background"
        owner = site.caller.user_id
        async with self.db.write() as tx:
            jobs = tx.jobs
            await jobs.lock_starts()  # the counts below hold until the insert commits
            job = await jobs.for_call(site.run_id, site.tool_call_id)
            fresh = job is None  # a replayed call finds its job: the same job answers
            if job is None:
                refused = await self._refusal(jobs, tool.name, owner)
                if refused is not None:
                    return error_outcome(refused, args=shown, code="background_limit")
                job = await jobs.create(
                    site,
                    tool.name,
                    args.model_dump(mode="json"),
                    instance_id=self.instance_id,
                    now=_now(),
                )
        if fresh and launch:
            self.launch(job.id, tool, args, site)
        if site.conversation_id is None:
            return receipt(tool.name, job.id, shown)
        return BackgroundStarted(job.id, summary, shown)

    async def _refusal(self, jobs: JobRepo, tool_name: str, owner: str) -> str | None:
        if await jobs.count_running(owner) >= self.per_user:
            return (
                f"You already have {self.per_user} background tasks running; `{tool_name}` "
                "was not started. Try again when one of them has finished."
            )
        if await jobs.count_running() >= self.total:
            return (
                "The service is running as many background tasks as it allows; "
                f"`{tool_name}` was not started. Try again later."
            )
        return None

    def launch(self, job_id: str, tool: ServerTool[Any], args: BaseModel, site: CallSite) -> None:
        """Run a started job's handler as a task outside any request."""
        self._spawn(job_id, tool, args, site)

    def _spawn(self, job_id: str, tool: ServerTool[Any], args: BaseModel, site: CallSite) -> None:
        task = asyncio.get_running_loop().create_task(
            self._run(job_id, tool, args, site), name=f"background job {job_id}"
        )
        self._running[job_id] = task
        self._keep_ref(task)

    def adopt(self, task: asyncio.Task[None]) -> None:
        """Keep a helper's task (the bus listener of `app.runs.job_stops`) until shutdown."""
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
            job = await tx.jobs.get(owner_id, job_id)
            ended = await self._record_cancel(tx.jobs, job_id)
        if ended:
            await self._stop_anywhere(job)
            self._deliver_later(job_id)
        return await self.get(owner_id, job_id)

    async def cancel_run(self, owner_id: str, run_id: str) -> None:
        """The run that started them was cancelled: so are its jobs (the run closes their
        parts as cancelled itself, so nothing is delivered)."""
        now = _now()
        stopped = []
        async with self.db.write() as tx:
            for job in await tx.jobs.running_of_run(owner_id, run_id):
                if await self._record_cancel(tx.jobs, job.id):
                    await tx.jobs.delivered(job.id, now)
                    stopped.append(job)
        for job in stopped:
            await self._stop_anywhere(job)

    async def _stop_anywhere(self, job: JobRecord) -> None:
        """Stop a job whose cancel is committed: here, or on the instance that runs it
        (told through the shared bus; failing that, its lease renewal notices)."""
        if job.instance_id == self.instance_id or self.tell is None:
            self._stop(job.id)
            return
        try:
            await self.tell(job.instance_id, job.id)
        except Exception:  # noqa: BLE001
            log.warning("could not tell an instance to stop a job", extra={"job_id": job.id})

    async def stop_if_ended(self, job_id: str) -> None:
        """Another instance recorded this job's cancel: stop its task here."""
        if job_id not in self._running:
            return
        async with self.db.read() as tx:
            job = await tx.jobs.load(job_id)
        if job is None or job.status != "running":
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
        message = restart_message(job.tool_name)
        if tool is not None and tool.resumable and tool.forward_identity == "bearer":
            # The user's own token lived in the dead process's memory only (never stored):
            # a run again could not act as the user. A minted identity is minted anew.
            message = token_lost_message(job.tool_name)
        elif tool is not None and tool.resumable:
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
