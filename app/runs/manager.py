"""The run manager: starts runs as background tasks, stores how they end, stops them.

A run belongs to the manager, not to the HTTP request that started it: the SSE route only
reads the log (`app.runs.reader`), so a client that disconnects loses nothing and comes
back through the same code path. Conversation runs persist their events (batched) and
their final message; stateless runs (`/api/chat`, `/v1/*`) live in memory.

    start_stateless / start_in_conversation -> ActiveRun (task launched)
    task: driver.play -> message_end -> _finish (store the end, then run_end, close log)
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Collection
from dataclasses import dataclass
from typing import Any

from app.agent.ports import ToolRuntime, ToolSelector
from app.domain.errors import NotFound, RateLimited
from app.domain.events import MessageEnd, RunEnd, RunStatus, SequencedEvent, UsageInfo
from app.domain.messages import Message, new_message_id
from app.files.attachments import Attachments
from app.runs.active import ActiveRun, RunRequest, new_run_id
from app.runs.bus import Bus
from app.runs.driver import Ending, RunLimits, play, to_the_end
from app.runs.finished import FinishedRuns
from app.runs.hooks import NoHooks, RunHooks
from app.runs.journal import Prepare, RunJournal
from app.runs.kept_cancel import cancel_by_row
from app.runs.leases import LeaseKeeper
from app.runs.log import RunLog
from app.runs.reader import RunReader
from app.runs.relay import Relay
from app.runs.remote import RemoteFollower
from app.runs.writer import EventWriter
from app.usage.book import NoUsage, UsageBook

log = logging.getLogger("chat_bff.runs")

# Pauses between attempts to store a run's end before it is closed as `failed`.
END_WRITE_RETRIES = (0.2, 1.0, 3.0)


@dataclass
class Unsettled:
    """A run whose end the database refused: what is left to store."""

    run: ActiveRun
    message: Message
    events: list[SequencedEvent]


class RunManager:
    def __init__(
        self,
        *,
        journal: RunJournal,
        tools: ToolRuntime,
        limits: RunLimits,
        hooks: RunHooks | None = None,
        lease_seconds: float = 15.0,
        attachments: Attachments | None = None,
        bus: Bus | None = None,
        router: ToolSelector | None = None,
        usage: UsageBook | None = None,
    ) -> None:
        self._attachments = attachments
        self._router = router
        self._usage: UsageBook | NoUsage = usage or NoUsage()
        self._journal = journal
        self._lease = lease_seconds
        self._tools = tools
        self._limits = limits
        self._hooks: RunHooks = hooks or NoHooks()
        self._active: dict[str, ActiveRun] = {}
        self._finished = FinishedRuns()
        self._unsettled: dict[str, Unsettled] = {}
        self._stopping = False
        # With a shared bus (Redis), runs are published and followed across instances and
        # control requests (cancel, catch-up, forget) reach the instance concerned.
        self._relay: Relay | None = None
        self._remote: RemoteFollower | None = None
        if bus is not None and bus.shared:
            self._relay = Relay(
                bus,
                local=self.local,
                stop=_stop,
                forget=self._forget_local,
                recheck=self._cancels_kept,
            )
            self._remote = RemoteFollower(
                journal, bus, self._relay.request, self.local, lambda: self._stopping
            )
        self._reader = RunReader(journal, self.local, lambda: self._stopping, self._remote)
        self._leases = LeaseKeeper(
            journal, self, lease_seconds=lease_seconds, on_recovered=self._hooks.recovered
        )

    # -- starting runs --------------------------------------------------------------

    async def start_stateless(self, request: RunRequest, history: list[Message]) -> ActiveRun:
        """A run that stores nothing: its log lives in memory."""
        run_id = new_run_id()
        allowance = await self._usage.admit(request.caller)
        run = ActiveRun(
            run_id=run_id,
            owner_id=request.caller.user_id,
            conversation_id=None,
            message_id=new_message_id(),
            log=RunLog(run_id),
            writer=None,
            allowance=allowance,
        )
        await self._hooks.admit(request.caller, run.run_id)
        self._launch(run, request, history)
        return run

    async def start_in_conversation(
        self,
        request: RunRequest,
        conversation_id: str,
        user_message: Message | None,
        *,
        prepare: Prepare | None = None,
        run_id: str | None = None,
    ) -> ActiveRun | None:
        """Store the user message (if any) and start a run that continues the conversation.

        With `user_message=None` the run continues after tool results or approvals.
        Raises Conflict (409) with the active run's id when one is running. `prepare`
        (see `RunJournal.begin`) may decide that no run is due yet: then None. `run_id`
        is the new run's id when the caller must know it before (to keep it in `prepare`).
        """
        run_id = run_id or new_run_id()
        message_id = new_message_id()
        allowance = await self._usage.admit(request.caller)
        try:
            await self._hooks.admit(request.caller, run_id)
        except RateLimited:
            # A conversation that is busy answers 409 with its run, whatever the limits.
            await self._journal.refuse_if_busy(request.caller.user_id, conversation_id)
            raise
        try:
            history = await self._journal.begin(
                owner_id=request.caller.user_id,
                conversation_id=conversation_id,
                run_id=run_id,
                model_id=request.model.id,
                assistant_message_id=message_id,
                user_message=user_message,
                prepare=prepare,
                options=request.stored_options(),
                system_prompt=request.system_prompt,
            )
        except BaseException:
            await self._hooks.abandon(request.caller, run_id)
            raise
        if history is None:
            await self._hooks.abandon(request.caller, run_id)
            return None
        run = ActiveRun(
            run_id=run_id,
            owner_id=request.caller.user_id,
            conversation_id=conversation_id,
            message_id=message_id,
            log=RunLog(run_id),
            writer=EventWriter(lambda batch: self._journal.append_events(run_id, batch)),
            allowance=allowance,
        )
        self._launch(run, request, history)
        return run

    def _launch(self, run: ActiveRun, request: RunRequest, history: list[Message]) -> None:
        self._active[run.run_id] = run
        self._hooks.started(run.run_id)
        if self._relay is not None and run.conversation_id is not None:
            self._relay.carry(run)
        # The task copies the current context, so its log lines carry the run id.
        with self._hooks.bind(run.run_id):
            run.task = asyncio.get_running_loop().create_task(
                self._drive(run, request, history), name=f"run {run.run_id}"
            )

    # -- the run task ---------------------------------------------------------------

    async def _drive(self, run: ActiveRun, request: RunRequest, history: list[Message]) -> None:
        run.started = True
        ending: Ending | None = None
        try:
            ending = await play(
                run,
                request,
                history,
                self._tools,
                self._limits,
                self._attachments,
                router=self._router,
            )
            run.final_message = ending.message
            # The turn is over: a cancel landing now (Stop pressed as the answer ends) must
            # not cut the run off between its answer and its stored end and run_end.
            await to_the_end(self._conclude(run, request, ending))
        finally:
            await self._hooks.finished(
                request.caller,
                run.run_id,
                ending.status if ending is not None else "failed",
                time.monotonic() - run.started_at,
                ending.usage if ending is not None else UsageInfo(),
            )

    async def _conclude(self, run: ActiveRun, request: RunRequest, ending: Ending) -> None:
        # Booked before the end is visible: the caller's next run is checked against it
        # (a conversation run's rows go into the transaction that stores its end).
        run.usage_rows = await self._usage.run_ended(
            request.caller, run.run_id, run.conversation_id, ending.calls
        )
        await run.emit(MessageEnd(run_id=run.run_id, message=ending.message))
        await self._finish(run, ending)

    async def _finish(self, run: ActiveRun, ending: Ending) -> None:
        end = RunEnd(
            run_id=run.run_id, status=ending.status, usage=ending.usage, error=ending.error
        )
        run.status = ending.status
        if run.conversation_id is not None:
            # One transaction stores the events still buffered, `run_end` (under the seq
            # the log gives it next), the message and the run's final state; only then does
            # run_end become visible, so a reader that sees it and reloads the conversation
            # finds the message there.
            assert run.writer is not None
            rest = await run.writer.take_rest()
            end = await self._store_end(run, ending, end, rest)
            run.status = end.status
            run.log.append(end)
        else:
            await run.emit(end)
        run.log.close()
        self._active.pop(run.run_id, None)
        if run.conversation_id is None:
            # A stateless run is read only through the handle that started it, which
            # holds it; kept here it would outlive its request (and, after a burst of
            # streams, scatter survivors that keep the allocator's arenas resident).
            return
        self._finished.add(run)

    async def _store_end(
        self, run: ActiveRun, ending: Ending, end: RunEnd, rest: list[SequencedEvent]
    ) -> RunEnd:
        """Store the run's end (with its usage rows), retrying a failing database briefly;
        returns the `run_end` readers get. When it cannot be stored, the run is closed as
        `failed` (its answer not saved) in the background until the database takes it, so
        the conversation never stays claimed by a run that no longer lives; its usage goes
        to the batching writer, which retries it on its own."""
        assert run.conversation_id is not None
        seq, rows = run.log.last_seq + 1, run.usage_rows
        for delay in (*END_WRITE_RETRIES, None):
            try:
                await self._journal.finish(
                    owner_id=run.owner_id,
                    conversation_id=run.conversation_id,
                    run_id=run.run_id,
                    status=ending.status,
                    message=ending.message,
                    usage=ending.usage,
                    error=ending.error,
                    last_seq=seq,
                    events=[*rest, SequencedEvent(seq=seq, event=end)],
                    usage_rows=rows,
                )
                self._usage.booked(rows)
                return end
            except NotFound:
                self._usage.write_later(rows)  # spent all the same
                return end  # purged meanwhile: nothing is left to close
            except Exception:
                log.warning(
                    "could not store the end of a run",
                    extra={"run_id": run.run_id, "retry_in": delay},
                    exc_info=True,
                )
            if delay is not None:
                await asyncio.sleep(delay)
        failed = RunEnd(
            run_id=run.run_id,
            status="failed",
            usage=ending.usage,
            error={
                "code": "not_stored",
                "message": "The answer could not be saved; send the message again.",
                "retryable": True,
            },
        )
        self._usage.write_later(rows)
        self._unsettled[run.run_id] = Unsettled(
            run, ending.message, [*rest, SequencedEvent(seq=seq, event=failed)]
        )
        return failed

    async def settle(self) -> None:
        """Close runs whose end could not be stored as `failed` (see `_store_end`)."""
        for run_id, left in list(self._unsettled.items()):
            assert left.run.conversation_id is not None
            try:
                await self._journal.close_failed(
                    owner_id=left.run.owner_id,
                    conversation_id=left.run.conversation_id,
                    run_id=run_id,
                    message=left.message,
                    events=left.events,
                )
            except NotFound:
                pass
            except Exception:
                log.warning(
                    "a run's end is still not stored", extra={"run_id": run_id}, exc_info=True
                )
                continue
            self._unsettled.pop(run_id, None)

    # -- reading --------------------------------------------------------------------

    def held(self) -> list[str]:
        """Conversation runs this instance answers for: running, or ended but not stored."""
        running = [r.run_id for r in self._active.values() if r.conversation_id]
        return [*running, *self._unsettled]

    async def forget(self, conversation_id: str) -> None:
        """Drop the finished logs of a purged conversation: nothing of it may be served,
        from this instance's memory or any other's."""
        self._forget_local(conversation_id)
        if self._relay is not None:
            try:
                await self._relay.request("forget", conversation_id=conversation_id)
            except Exception:
                log.warning("could not tell other instances of a purge", exc_info=True)

    def _forget_local(self, conversation_id: str) -> None:
        self._finished.forget(conversation_id)

    def local(self, run_id: str) -> ActiveRun | None:
        return self._active.get(run_id) or self._finished.get(run_id)

    async def position(
        self, owner_id: str, run_id: str, conversation_id: str | None
    ) -> tuple[bool, int]:
        return await self._reader.position(owner_id, run_id, conversation_id)

    def follow(
        self, owner_id: str, run_id: str, *, conversation_id: str | None, after: int = 0
    ) -> AsyncIterator[list[SequencedEvent]]:
        return self._reader.follow(owner_id, run_id, conversation_id=conversation_id, after=after)

    async def stored_options(self, owner_id: str, conversation_id: str) -> dict[str, Any]:
        return await self._journal.latest_options(owner_id, conversation_id)

    # -- stopping -------------------------------------------------------------------

    async def cancel(self, owner_id: str, run_id: str, conversation_id: str | None) -> RunStatus:
        """Stop a run; harmless when it already ended. Returns the run's final status."""
        run = self.local(run_id)
        if (
            run is None
            or run.owner_id != owner_id
            or (conversation_id is not None and run.conversation_id != conversation_id)
        ):
            record = await self._journal.get_run(owner_id, run_id, conversation_id)
            if record is None:
                raise NotFound("Run not found.")
            if record.status != "running":
                return record.status  # type: ignore[return-value]
            # Another instance runs it: the request reaches it through the bus, and the
            # run's row in any case (read at the owner's next lease renewal).
            if self._remote is not None:
                return await self._remote.cancel(owner_id, run_id, conversation_id)
            return await cancel_by_row(
                self._journal, owner_id, run_id, conversation_id, lease_seconds=self._lease
            )
        if run.task is not None and not run.task.done():
            _stop(run)
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.shield(run.task)
        return run.status

    def cancelled_elsewhere(self, run_ids: Collection[str]) -> None:
        """Stop the runs running here that a cancel received elsewhere asked to stop."""
        for run_id in run_ids:
            run = self._active.get(run_id)
            if run is not None and run.task is not None and not run.task.done():
                _stop(run)

    async def _cancels_kept(self) -> None:
        """The bus may have lost cancels meant for this instance (its connection broke):
        apply those kept on the runs' rows."""
        self.cancelled_elsewhere(await self._journal.cancel_requested(self.held()))

    async def start(self) -> int:
        """Close what dead processes left running and keep this instance's leases."""
        if self._relay is not None:
            await self._relay.start()
        return await self._leases.start()

    async def recover(self) -> int:
        """Close runs a dead process left running: status interrupted, message kept."""
        return await self._leases.recover()

    async def shutdown(self, grace_seconds: float) -> None:
        """Checkpoint every running run as interrupted (SIGTERM), within `grace_seconds`;
        readers following runs of other instances from here are let go."""
        self._stopping = True
        await self._leases.stop()
        runs = list(self._active.values())
        for run in runs:
            run.shutting_down = True
            _stop(run)
        tasks = [r.task for r in runs if r.task is not None]
        if tasks:
            await asyncio.wait(tasks, timeout=grace_seconds)
        if self._relay is not None:
            await self._relay.stop(grace_seconds)


def _stop(run: ActiveRun) -> None:
    run.cancel_requested = True
    if run.started and run.task is not None:
        run.task.cancel()
