"""The body of a run's task: play one agent turn and say how it ended.

`play` announces the run (`run_start`), runs the agent under the run's time cap and turns
every way a turn can stop into an `Ending`: completed or paused by the agent, cancelled or
interrupted (shutdown), timed out, failed with one of our errors, or crashed on a bug.
Whatever happens, the partial answer is kept. Storing the end is the manager's job.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any

from app.agent.context import fit_history
from app.agent.loop import Agent
from app.agent.ports import ToolRuntime, ToolSelector
from app.agent.turn import TurnOptions
from app.domain import deadlines
from app.domain.errors import ChatBffError
from app.domain.events import ErrorEvent, PartUpdate, RunStart, RunStatus, UsageInfo
from app.domain.messages import Message
from app.domain.tooling import RunContext
from app.domain.usage import CallUsage
from app.files.attachments import Attachments
from app.runs.active import ActiveRun, RunRequest, StoppedBeforeStart

log = logging.getLogger("chat_bff.runs")


@dataclass(frozen=True)
class RunLimits:
    """Caps every run shares: model calls per run and wall-clock seconds."""

    max_iterations: int
    run_timeout: float


@dataclass
class Ending:
    """How a run ended: its status, its (possibly partial) message, usage and error."""

    status: RunStatus
    message: Message
    usage: UsageInfo
    error: dict[str, Any] | None = None
    calls: list[CallUsage] = field(default_factory=list)  # each model call's usage


def _agent(
    run: ActiveRun,
    request: RunRequest,
    tools: ToolRuntime,
    limits: RunLimits,
    router: ToolSelector | None = None,
) -> Agent:
    ctx = RunContext(
        caller=request.caller,
        run_id=run.run_id,
        conversation_id=run.conversation_id,
        mode=request.mode,
        scope={**request.scope},
        model_id=request.model.id,
    )
    return Agent(
        provider=request.provider,
        model=request.model,
        tools=tools,
        sink=run,
        ctx=ctx,
        message_id=run.message_id,
        router=router,
        allowance=run.allowance,
        fallbacks=request.fallback_models,
        options=TurnOptions(
            max_iterations=limits.max_iterations,
            client_tools=request.client_tools,
            tool_choice=request.tool_choice,
            max_output_tokens=request.max_output_tokens,
            temperature=request.temperature,
            parallel_tool_calls=request.parallel_tool_calls,
            generation=request.options,
        ),
    )


async def _announce(
    run: ActiveRun, request: RunRequest, history: list[Message], cut: list[str]
) -> None:
    _, context = fit_history(
        history,
        context_window=request.model.context_window,
        reserve_tokens=_reserve(request),
    )
    if request.context is not None and request.context.truncated_input:
        context.truncated_input = True
    context.truncated_documents = cut
    await run.emit(
        RunStart(
            run_id=run.run_id,
            model=request.model.id,
            message_id=run.message_id,
            conversation_id=run.conversation_id,
            context=context,
        )
    )
    for change in request.decided:
        await run.emit(
            PartUpdate(
                run_id=run.run_id,
                message_id=change.message_id,
                part=change.part,
                cause=change.cause,
            )
        )


def _reserve(request: RunRequest) -> int:
    return min(4096, request.model.max_output_tokens)


async def _expanded(
    request: RunRequest, history: list[Message], attachments: Attachments | None
) -> tuple[list[Message], list[str], BaseException | None]:
    """The history with its attachments expanded for the model, and the documents cut.
    A failure (the database out of reach) or a cancel (reading a large document takes
    a while) is returned, for the turn to end with it after run_start: raised out of
    `play`, the run would never send run_end and its readers would wait for ever."""
    if attachments is None:
        return history, [], None
    try:
        expanded = await attachments.for_model(
            request.caller.user_id,
            history,
            request.model,
            _reserve(request),
            request.inline_files,
        )
    except (Exception, asyncio.CancelledError) as exc:  # noqa: BLE001 - raised again in the turn
        return history, [], exc
    return expanded.messages, expanded.cut, None


async def play(
    run: ActiveRun,
    request: RunRequest,
    history: list[Message],
    tools: ToolRuntime,
    limits: RunLimits,
    attachments: Attachments | None = None,
    router: ToolSelector | None = None,
) -> Ending:
    """Run the turn; never raises for anything the turn itself did.

    Attached files are expanded for the model here (documents become their text, cut to
    the context budget; images their bytes), so the stored history keeps references only.
    """
    agent = _agent(run, request, tools, limits, router)
    status: RunStatus = "failed"
    error: dict[str, Any] | None = None
    message: Message
    history, cut, unexpanded = await _expanded(request, history, attachments)
    await _announce(run, request, history, cut)
    try:
        if unexpanded is not None:
            raise unexpanded
        if run.cancel_requested:
            raise StoppedBeforeStart
        async with deadlines.timeout(limits.run_timeout):
            result = await agent.run(history)
        status, message = result.status, result.message
        if result.note:
            error = {"code": result.error_code or "max_iterations", "message": result.note}
            error.update(result.detail or {})
            message.metadata = {**(message.metadata or {}), "note": result.note}
    except (asyncio.CancelledError, StoppedBeforeStart) as stop:
        task = asyncio.current_task()
        if isinstance(stop, asyncio.CancelledError) and task is not None:
            task.uncancel()
        status = "interrupted" if run.shutting_down else "cancelled"
        message = agent.snapshot(interrupted=status)
        if status == "interrupted":
            error = {
                "code": "shutting_down",
                "message": "The service restarted during this answer; send it again.",
                "retryable": True,
            }
    except TimeoutError:
        error = {"code": "run_timeout", "message": "The run exceeded its time limit."}
        message = agent.snapshot(interrupted="failed")
    except ChatBffError as exc:
        log.warning(
            "run failed: %s",
            exc.message,
            extra={
                "run_id": run.run_id,
                "code": exc.code,
                "cause": type(exc.__cause__).__name__ if exc.__cause__ else None,
            },
        )
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
    if error is not None and status in ("failed", "interrupted"):
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
    return Ending(status=status, message=message, usage=usage, error=error, calls=agent.meter.calls)


async def to_the_end(work: Coroutine[Any, Any, None]) -> None:
    """Run `work` to its end even when this task is cancelled meanwhile.

    Once a turn has its ending, what is left (book the usage, store the end, send
    `run_end`) is what any stop would ask for anyway. A cancel that interrupted it would
    leave the end stored but never sent: readers of the live log would wait forever and
    the run would stay held in memory. So a cancel is absorbed and the work finishes.
    """
    task = asyncio.current_task()
    inner = asyncio.ensure_future(work)
    while True:
        try:
            await asyncio.shield(inner)
            return
        except asyncio.CancelledError:
            if inner.cancelled() or task is None:
                raise
            task.uncancel()
