"""The run manager: starts runs as background tasks and serves their event logs.

A run belongs to the manager, not to the HTTP request that started it: the SSE route only
reads the log, so a client that disconnects loses nothing and comes back through the same
code path (`follow`). Conversation runs persist their events (batched) and their final
message; stateless runs (`/api/chat`) live in memory and stop when their reader leaves.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections import OrderedDict
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from app.agent.context import fit_history
from app.agent.loop import Agent, TurnOptions, TurnResult
from app.agent.ports import ToolRuntime
from app.domain.errors import ChatBffError, NotFound
from app.domain.events import (
    ContextInfo,
    ErrorEvent,
    MessageEnd,
    RunEnd,
    RunEvent,
    RunStart,
    RunStatus,
    SequencedEvent,
    UsageInfo,
)
from app.domain.identity import Caller
from app.domain.messages import Message, new_message_id
from app.domain.models import ModelInfo
from app.domain.stream import ToolChoice, ToolSpec
from app.domain.tooling import ConversationMode, RunContext
from app.providers.base import Provider
from app.runs.hooks import NoHooks, RunHooks
from app.runs.log import RunLog
from app.runs.store import Prepare, RunStore
from app.runs.writer import EventWriter

log = logging.getLogger("chat_bff.runs")

# Recently finished runs stay in memory so a reader that reconnects right after the end
# is served without the database; bounded, since a long answer holds thousands of events.
FINISHED_LOGS_KEPT = 64


class _StoppedBeforeStart(Exception):
    """Cancel (or shutdown) arrived before the run's task began."""


def new_run_id() -> str:
    return f"run_{uuid.uuid4().hex}"


@dataclass(frozen=True)
class RunRequest:
    """Everything a run needs besides its history."""

    caller: Caller
    model: ModelInfo
    provider: Provider
    client_tools: Sequence[ToolSpec] = ()
    tool_choice: ToolChoice | None = None
    max_output_tokens: int | None = None
    temperature: float | None = None
    mode: ConversationMode = "auto"
    scope: dict[str, str] = field(default_factory=dict)
    context: ContextInfo | None = None
    system_prompt: str | None = None


@dataclass
class ActiveRun:
    run_id: str
    owner_id: str
    conversation_id: str | None
    message_id: str
    log: RunLog
    writer: EventWriter | None
    task: asyncio.Task[None] | None = None
    result: TurnResult | None = None
    status: RunStatus = "running"
    started_at: float = field(default_factory=time.monotonic)
    shutting_down: bool = False
    # Set when the task's body has begun; a task cancelled before that would never run
    # its body (and never close the run), so cancel() only flags such a run instead.
    started: bool = False
    cancel_requested: bool = False
    failure: ChatBffError | None = None
    final_message: Message | None = None
    truncated_input: bool = False  # the user message was cut to fit (the answer says so)

    async def emit(self, event: RunEvent) -> None:
        item = self.log.append(event)
        if self.writer is not None:
            self.writer.add(item)


class RunManager:
    def __init__(
        self,
        *,
        store: RunStore,
        tools: ToolRuntime,
        max_iterations: int,
        run_timeout: float,
        hooks: RunHooks | None = None,
        lease_seconds: float = 15.0,
    ) -> None:
        self._store = store
        self._lease = lease_seconds
        self._keepalive: asyncio.Task[None] | None = None
        self._tools = tools
        self._max_iterations = max_iterations
        self._run_timeout = run_timeout
        self._hooks: RunHooks = hooks or NoHooks()
        self._active: dict[str, ActiveRun] = {}
        self._finished: OrderedDict[str, ActiveRun] = OrderedDict()

    # -- starting runs --------------------------------------------------------------

    async def start_stateless(self, request: RunRequest, history: list[Message]) -> ActiveRun:
        """A run for `/api/chat`: memory only; it stops when its reader goes away."""
        run = ActiveRun(
            run_id=new_run_id(),
            owner_id=request.caller.user_id,
            conversation_id=None,
            message_id=new_message_id(),
            log=RunLog(""),
            writer=None,
        )
        run.log.run_id = run.run_id
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
        (see `RunStore.begin`) may decide that no run is due yet: then None.
        """
        run_id = new_run_id()
        message_id = new_message_id()
        await self._hooks.admit(request.caller, run_id)
        try:
            history = await self._store.begin(
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
            writer=None,
        )
        run.writer = EventWriter(lambda batch: self._store.append_events(run_id, batch))
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
        ctx = RunContext(
            caller=request.caller,
            run_id=run.run_id,
            conversation_id=run.conversation_id,
            mode=request.mode,
            scope={**request.scope},
            model_id=request.model.id,
        )
        agent = Agent(
            provider=request.provider,
            model=request.model,
            tools=self._tools,
            sink=run,
            ctx=ctx,
            message_id=run.message_id,
            options=TurnOptions(
                max_iterations=self._max_iterations,
                client_tools=request.client_tools,
                tool_choice=request.tool_choice,
                max_output_tokens=request.max_output_tokens,
                temperature=request.temperature,
            ),
        )
        status: RunStatus = "failed"
        error: dict[str, Any] | None = None
        message: Message
        _, context = fit_history(
            history,
            context_window=request.model.context_window,
            reserve_tokens=min(4096, request.model.max_output_tokens),
        )
        if request.context is not None and request.context.truncated_input:
            context.truncated_input = True
        await run.emit(
            RunStart(
                run_id=run.run_id,
                model=request.model.id,
                message_id=run.message_id,
                conversation_id=run.conversation_id,
                context=context,
            )
        )
        try:
            if run.cancel_requested:
                raise _StoppedBeforeStart
            async with asyncio.timeout(self._run_timeout):
                result = await agent.run(history)
            status, message = result.status, result.message
            if result.note:
                error = {"code": "max_iterations", "message": result.note}
                message.metadata = {**(message.metadata or {}), "note": result.note}
        except (asyncio.CancelledError, _StoppedBeforeStart) as stop:
            task = asyncio.current_task()
            if isinstance(stop, asyncio.CancelledError) and task is not None:
                task.uncancel()
            status = "interrupted" if run.shutting_down else "cancelled"
            message = agent.snapshot(interrupted=status)
        except TimeoutError:
            error = {"code": "run_timeout", "message": "The run exceeded its time limit."}
            message = agent.snapshot(interrupted="failed")
        except ChatBffError as exc:
            run.failure = exc
            error = {"code": exc.code, "message": exc.message, "retryable": exc.retryable}
            retry_after = getattr(exc, "retry_after", None)
            if retry_after is not None:
                error["retry_after"] = retry_after
            message = agent.snapshot(interrupted="failed")
        except Exception:
            # A bug, not a provider failure (those are ChatBffErrors): keep the run's record
            # straight and tell the client nothing more than that it failed. The traceback
            # goes to the log, whose redaction filter scrubs anything key-shaped.
            log.exception("run crashed", extra={"run_id": run.run_id})
            error = {"code": "internal_error", "message": "The run failed unexpectedly."}
            message = agent.snapshot(interrupted="failed")
        if error is not None and status == "failed":
            await run.emit(
                ErrorEvent(
                    run_id=run.run_id,
                    code=str(error["code"]),
                    message=str(error["message"]),
                    retryable=bool(error.get("retryable", False)),
                )
            )
        usage = agent.usage
        message.metadata = {
            **(message.metadata or {}),
            "run_id": run.run_id,
            "usage": usage.model_dump(),
        }
        run.final_message = message
        try:
            await run.emit(MessageEnd(run_id=run.run_id, message=message))
            await self._finish(run, status, message, usage, error)
        finally:
            await self._hooks.finished(
                request.caller,
                run.run_id,
                status,
                time.monotonic() - run.started_at,
                usage,
            )

    async def _finish(
        self,
        run: ActiveRun,
        status: RunStatus,
        message: Message,
        usage: UsageInfo,
        error: dict[str, Any] | None,
    ) -> None:
        end = RunEnd(run_id=run.run_id, status=status, usage=usage, error=error)
        run.status = status
        if run.conversation_id is not None:
            # One transaction stores the events still buffered, `run_end` (under the seq
            # the log gives it next), the message and the run's final state; only then does
            # run_end become visible, so a reader that sees it and reloads the conversation
            # finds the message there.
            assert run.writer is not None
            rest = await run.writer.take_rest()
            last = SequencedEvent(seq=run.log.last_seq + 1, event=end)
            try:
                await self._store.finish(
                    owner_id=run.owner_id,
                    conversation_id=run.conversation_id,
                    run_id=run.run_id,
                    status=status,
                    message=message,
                    usage=usage,
                    error=error,
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
        """(finished, last seq) of the caller's run; NotFound for a missing or foreign one."""
        run = self.local(run_id)
        if (
            run is not None
            and run.owner_id == owner_id
            and (conversation_id is None or run.conversation_id == conversation_id)
        ):
            return run.log.closed, run.log.last_seq
        record = await self._store.get_run(owner_id, run_id, conversation_id)
        if record is None:
            raise NotFound("Run not found.")
        return record.status != "running", record.last_seq

    async def follow(
        self, owner_id: str, run_id: str, *, conversation_id: str | None, after: int = 0
    ) -> AsyncIterator[list[SequencedEvent]]:
        """Batches of events after `after`: replayed, then live, until the run ends.

        Served from memory when this instance runs (or just ran) it; otherwise from the
        database, polling until the run's `run_end` is stored (another instance runs it).
        """
        run = self.local(run_id)
        if (
            run is not None
            and run.owner_id == owner_id
            and (conversation_id is None or run.conversation_id == conversation_id)
        ):
            async for batch in run.log.follow(after):
                yield batch
            return
        record = await self._store.get_run(owner_id, run_id, conversation_id)
        if record is None:
            raise NotFound("Run not found.")
        position = after
        while True:
            batch = await self._store.events_after(run_id, position)
            if batch:
                position = batch[-1].seq
                yield batch
                if batch[-1].event.type == "run_end":
                    return
                continue
            state = await self._store.get_run(owner_id, run_id, conversation_id)
            if state is None or state.status != "running":
                last = await self._store.events_after(run_id, position)
                if last:
                    yield last
                elif state is not None and position > state.last_seq:
                    # The reader saw events a crash never persisted: give it the end. (A
                    # reader at last_seq has seen run_end already: nothing is left.)
                    tail = await self._store.events_after(run_id, max(state.last_seq - 1, 0))
                    if tail and tail[-1].event.type == "run_end" and tail[-1].seq > 0:
                        yield tail[-1:]
                return
            live = self.local(run_id)
            if live is not None:
                async for live_batch in live.log.follow(position):
                    yield live_batch
                return
            await asyncio.sleep(0.25)

    # -- stopping -------------------------------------------------------------------

    async def cancel(self, owner_id: str, run_id: str, conversation_id: str | None) -> RunStatus:
        """Stop a run; harmless when it already ended. Returns the run's final status."""
        run = self.local(run_id)
        if (
            run is None
            or run.owner_id != owner_id
            or (conversation_id is not None and run.conversation_id != conversation_id)
        ):
            record = await self._store.get_run(owner_id, run_id, conversation_id)
            if record is None:
                raise NotFound("Run not found.")
            return record.status  # type: ignore[return-value]
        if run.task is not None and not run.task.done():
            self._stop(run)
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.shield(run.task)
        return run.status

    @staticmethod
    def _stop(run: ActiveRun) -> None:
        run.cancel_requested = True
        if run.started and run.task is not None:
            run.task.cancel()

    async def shutdown(self, grace_seconds: float) -> None:
        """Checkpoint every running run as interrupted (SIGTERM), within `grace_seconds`."""
        if self._keepalive is not None:
            self._keepalive.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._keepalive
        runs = list(self._active.values())
        for run in runs:
            run.shutting_down = True
            self._stop(run)
        tasks = [r.task for r in runs if r.task is not None]
        if tasks:
            await asyncio.wait(tasks, timeout=grace_seconds)

    async def stored_options(self, owner_id: str, conversation_id: str) -> dict[str, Any]:
        return await self._store.latest_options(owner_id, conversation_id)

    async def start(self) -> int:
        """Close what dead processes left running, then keep leases and sweep for more.

        Returns how many runs were closed now. A process killed just before this one
        started still holds fresh leases: the sweep closes its runs once they lapse.
        """
        closed = await self.recover()
        self._keepalive = asyncio.get_running_loop().create_task(
            self._keep_leases(), name="run leases"
        )
        return closed

    async def recover(self) -> int:
        """Close runs a dead process left running: status interrupted, message kept."""
        return await self._store.recover_interrupted(lease_seconds=self._lease)

    async def _keep_leases(self) -> None:
        interval = max(self._lease / 3, 0.05)
        while True:
            await asyncio.sleep(interval)
            try:
                mine = [r.run_id for r in self._active.values() if r.conversation_id]
                await self._store.renew(mine)
                closed = await self.recover()
                if closed:
                    log.warning("closed runs of a stopped instance", extra={"runs": closed})
            except Exception:
                log.exception("could not renew run leases")

    @property
    def active_count(self) -> int:
        return len(self._active)


def _options(request: RunRequest) -> dict[str, Any] | None:
    """What a later continuation needs to offer the model the same tools."""
    if not request.client_tools and request.tool_choice is None:
        return None
    choice = request.tool_choice
    return {
        "client_tools": [t.model_dump() for t in request.client_tools],
        "tool_choice": choice if choice is None or isinstance(choice, str) else choice.model_dump(),
    }
