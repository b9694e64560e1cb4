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
from collections import OrderedDict
from collections.abc import AsyncIterator
from typing import Any

from app.agent.ports import ToolRuntime
from app.domain.errors import NotFound
from app.domain.events import MessageEnd, RunEnd, RunStatus, SequencedEvent, UsageInfo
from app.domain.messages import Message, new_message_id
from app.runs.active import ActiveRun, RunRequest, new_run_id
from app.runs.driver import Ending, RunLimits, play
from app.runs.hooks import NoHooks, RunHooks
from app.runs.journal import Prepare, RunJournal
from app.runs.leases import LeaseKeeper
from app.runs.log import RunLog
from app.runs.reader import RunReader
from app.runs.writer import EventWriter

log = logging.getLogger("chat_bff.runs")

# Recently finished runs stay in memory so a reader that reconnects right after the end
# is served without the database; bounded, since a long answer holds thousands of events.
FINISHED_LOGS_KEPT = 64


class RunManager:
    def __init__(
        self,
        *,
        journal: RunJournal,
        tools: ToolRuntime,
        limits: RunLimits,
        hooks: RunHooks | None = None,
        lease_seconds: float = 15.0,
    ) -> None:
        self._journal = journal
        self._tools = tools
        self._limits = limits
        self._hooks: RunHooks = hooks or NoHooks()
        self._active: dict[str, ActiveRun] = {}
        self._finished: OrderedDict[str, ActiveRun] = OrderedDict()
        self._reader = RunReader(journal, self.local)
        self._leases = LeaseKeeper(
            journal,
            lambda: [r.run_id for r in self._active.values() if r.conversation_id],
            lease_seconds=lease_seconds,
        )

    # -- starting runs --------------------------------------------------------------

    async def start_stateless(self, request: RunRequest, history: list[Message]) -> ActiveRun:
        """A run that stores nothing: its log lives in memory."""
        run_id = new_run_id()
        run = ActiveRun(
            run_id=run_id,
            owner_id=request.caller.user_id,
            conversation_id=None,
            message_id=new_message_id(),
            log=RunLog(run_id),
            writer=None,
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
    ) -> ActiveRun | None:
        """Store the user message (if any) and start a run that continues the conversation.

        With `user_message=None` the run continues after tool results or approvals.
        Raises Conflict (409) with the active run's id when one is running. `prepare`
        (see `RunJournal.begin`) may decide that no run is due yet: then None.
        """
        run_id = new_run_id()
        message_id = new_message_id()
        await self._hooks.admit(request.caller, run_id)
        try:
            history = await self._journal.begin(
                owner_id=request.caller.user_id,
                conversation_id=conversation_id,
                run_id=run_id,
                model_id=request.model.id,
                assistant_message_id=message_id,
                user_message=user_message,
                prepare=prepare,
                options=_options(request),
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
        )
        self._launch(run, request, history)
        return run

    def _launch(self, run: ActiveRun, request: RunRequest, history: list[Message]) -> None:
        self._active[run.run_id] = run
        self._hooks.started(run.run_id)
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
            ending = await play(run, request, history, self._tools, self._limits)
            run.final_message = ending.message
            await run.emit(MessageEnd(run_id=run.run_id, message=ending.message))
            await self._finish(run, ending)
        finally:
            await self._hooks.finished(
                request.caller,
                run.run_id,
                ending.status if ending is not None else "failed",
                time.monotonic() - run.started_at,
                ending.usage if ending is not None else UsageInfo(),
            )

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
            last = SequencedEvent(seq=run.log.last_seq + 1, event=end)
            try:
                await self._journal.finish(
                    owner_id=run.owner_id,
                    conversation_id=run.conversation_id,
                    run_id=run.run_id,
                    status=ending.status,
                    message=ending.message,
                    usage=ending.usage,
                    error=ending.error,
                    last_seq=last.seq,
                    events=[*rest, last],
                )
            except Exception:
                # The run's lease lapses once it leaves _active: a sweep then closes it as
                # interrupted from what was stored. Readers here still get every event.
                log.exception("could not store the end of a run", extra={"run_id": run.run_id})
            run.log.append(end)
        else:
            await run.emit(end)
        run.log.close()
        self._active.pop(run.run_id, None)
        self._finished[run.run_id] = run
        while len(self._finished) > FINISHED_LOGS_KEPT:
            self._finished.popitem(last=False)

    # -- reading --------------------------------------------------------------------

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
            return record.status  # type: ignore[return-value]
        if run.task is not None and not run.task.done():
            _stop(run)
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.shield(run.task)
        return run.status

    async def start(self) -> int:
        """Close what dead processes left running and keep this instance's leases."""
        return await self._leases.start()

    async def recover(self) -> int:
        """Close runs a dead process left running: status interrupted, message kept."""
        return await self._leases.recover()

    async def shutdown(self, grace_seconds: float) -> None:
        """Checkpoint every running run as interrupted (SIGTERM), within `grace_seconds`."""
        await self._leases.stop()
        runs = list(self._active.values())
        for run in runs:
            run.shutting_down = True
            _stop(run)
        tasks = [r.task for r in runs if r.task is not None]
        if tasks:
            await asyncio.wait(tasks, timeout=grace_seconds)


def _stop(run: ActiveRun) -> None:
    run.cancel_requested = True
    if run.started and run.task is not None:
        run.task.cancel()


def _options(request: RunRequest) -> dict[str, Any] | None:
    """What a later continuation needs to offer the model the same tools."""
    if not request.client_tools and request.tool_choice is None:
        return None
    choice = request.tool_choice
    return {
        "client_tools": [t.model_dump() for t in request.client_tools],
        "tool_choice": choice if choice is None or isinstance(choice, str) else choice.model_dump(),
    }
