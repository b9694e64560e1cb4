"""One run of the tool-calling loop.

    model call -> tool calls -> results -> model call -> ... -> answer

Each model call is one iteration; the cap counts model calls. Server tools run
concurrently through the `ToolRuntime` (which pins scope arguments, validates and applies
the policy); client tools are never run here: their parts wait for the browser. A run
writes ONE assistant message: every model call appends its parts to it, and the tool
parts carry their results, which is the shape AIKit renders and the translators expand
into each vendor's alternating turns.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field

from app.agent.context import fit_history, routing_request
from app.agent.metering import BudgetStop, Meter
from app.agent.part_fixes import (
    DATA_FIELDS,
    close_dangling,
    none_usable,
    unknown_tool,
    valid_args,
    waiting_changes,
    waits_for_human,
)
from app.agent.ports import EventSink, ToolRuntime, ToolSelector
from app.agent.turn import TurnOptions, TurnResult, TurnStatus
from app.agent.valid_stream import ValidStream
from app.domain.events import (
    ConfirmRequired,
    ContextInfo,
    PartUpdate,
    RunStatus,
    StepReset,
    TextDeltaEvent,
    ThinkingDeltaEvent,
    ToolArgsDelta,
    ToolEnd,
    ToolError,
    ToolStart,
    UsageInfo,
)
from app.domain.messages import Message
from app.domain.models import ModelInfo
from app.domain.parts import Part, ToolData, ToolPart, awaiting
from app.domain.stream import (
    ModelRequest,
    NamedToolChoice,
    ProviderEvent,
    StreamReset,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    only_given,
)
from app.domain.tooling import (
    ApprovalNeeded,
    BackgroundStarted,
    InputNeeded,
    RunContext,
    ToolOutcome,
)
from app.domain.usage import Allowance, BudgetLimit
from app.providers.base import Provider
from app.translate.accumulator import PartsBuilder

# A model call whose every tool call is malformed (arguments that are not a JSON object, or
# a tool that does not exist) is answered with the error and asked again this many times;
# another malformed answer ends the turn as failed, its error parts kept.
MALFORMED_RETRIES = 1


@dataclass(slots=True)  # one per open stream: no attribute dict
class Agent:
    """Runs one turn; its state stays readable so a cancel can keep the partial answer."""

    provider: Provider
    model: ModelInfo
    tools: ToolRuntime
    sink: EventSink
    ctx: RunContext
    message_id: str
    options: TurnOptions = field(default_factory=TurnOptions)
    parts: list[Part] = field(default_factory=list)
    usage: UsageInfo = field(default_factory=UsageInfo)
    _builder: PartsBuilder | None = None
    refused: str | None = None  # the refusal's explanation, when the model declined
    cut_short: bool = False  # the last model call stopped at its output token limit
    answered_by: str | None = None  # the fallback's catalogue id, when one answered
    router: ToolSelector | None = None  # offers only the server tools a request needs
    allowance: Allowance | None = None  # what the caller's budgets left when the run began
    fallbacks: Sequence[ModelInfo] = ()  # the models that may answer instead (failover)
    replaced: list[dict[str, str]] = field(default_factory=list)  # attempts failover voided
    meter: Meter = field(init=False)

    def __post_init__(self) -> None:
        self.meter = Meter(self.model, self.usage, self.allowance, self.fallbacks)

    # -- the loop -------------------------------------------------------------------

    async def run(self, history: list[Message]) -> TurnResult:
        try:
            return await self._run(history)
        except BudgetStop as stop:
            return self._over_budget(stop.limit, None)

    async def _run(self, history: list[Message]) -> TurnResult:
        context: ContextInfo | None = None
        server_specs = self.tools.specs(self.ctx) if self.model.supports_tools else []
        if self.router is not None and server_specs:
            text, used = routing_request(history)
            choice = self.options.tool_choice
            if isinstance(choice, NamedToolChoice):  # the tool the client forces stays offered
                used = [*used, choice.name]
            server_specs = await self.router.select(text, server_specs, self.model, used)
        client_specs = list(self.options.client_tools) if self.model.supports_tools else []
        client_names = {spec.name for spec in client_specs}
        offers_tools = bool(server_specs or client_specs)
        malformed = 0
        for _ in range(self.options.max_iterations):
            messages = history + ([self.snapshot()] if self.parts else [])
            fitted, info = fit_history(
                messages,
                context_window=self.model.context_window,
                reserve_tokens=min(self.options.reserve_tokens, self.model.max_output_tokens),
            )
            context = context or info
            request = ModelRequest(
                model=self.model.upstream_model,
                messages=fitted,
                max_output_tokens=self.model.output_cap(self.options.max_output_tokens),
                **only_given(
                    tools=[*server_specs, *client_specs],
                    tool_choice=self.options.tool_choice if offers_tools else None,
                    temperature=self.options.temperature,
                    parallel_tool_calls=self.options.parallel_tool_calls,
                    options=self.options.generation,
                ),
            )
            new_parts = await self._call_model(request)
            self.parts.extend(new_parts)
            calls = [p for p in new_parts if isinstance(p, ToolPart)]
            if not calls:
                return TurnResult("completed", self.snapshot(), self.usage, context)
            crossed = self.meter.crossed()
            if crossed is not None:  # the tools and the next call would spend more
                return self._over_budget(crossed, context)
            malformed = malformed + 1 if none_usable(calls, client_names, self.tools.knows) else 0
            waiting = await self._settle_tool_calls(calls, client_names)
            if malformed > MALFORMED_RETRIES:
                note = (
                    f"The model answered with malformed tool calls {malformed} times in a row "
                    "(arguments that are not a JSON object, or a tool that does not exist)."
                )
                return TurnResult(
                    "failed", self.snapshot(), self.usage, context, note, "malformed_tool_call"
                )
            if waiting:
                return TurnResult("requires_action", self.snapshot(), self.usage, context)
        note = (
            f"Stopped after {self.options.max_iterations} model calls "
            "(the iteration cap) without a final answer."
        )
        return TurnResult("max_iterations", self.snapshot(), self.usage, context, note)

    def _over_budget(self, limit: BudgetLimit, context: ContextInfo | None) -> TurnResult:
        """The run went past a budget: it ends here, its answer so far kept and marked."""
        status: TurnStatus = "budget_exceeded"
        message = self.snapshot(interrupted=status)
        note = f"Stopped: this answer went past {limit.explain()}."
        return TurnResult(status, message, self.usage, context, note, status, limit.detail())

    async def _call_model(self, request: ModelRequest) -> list[Part]:
        builder = PartsBuilder()
        self._builder = builder
        self.meter.begin(request)
        stream = self.provider.stream(request)
        check = ValidStream()
        try:
            async for raw in stream:
                for event in check.feed(raw):
                    await self._take(event, builder, request)
            for event in check.flush():
                await self._take(event, builder, request)
        except BaseException:
            self.meter.end(builder.build(), partial=True)  # what streamed was billed
            raise
        finally:
            # Closing the provider stream closes the upstream response (disconnect, cancel).
            await stream.aclose()
        response = builder.build()
        self._builder = None
        self.meter.end(response)
        if response.finish_reason in ("refusal", "content_filter"):
            # The model (or its provider's filter) declined: every wire says so, as
            # OpenAI's `content_filter` finish and `refusal` text, not as a plain stop.
            self.refused = response.finish_detail or "The model declined to answer."
        # An answer stopped by the output token limit is not whole: wires that can say
        # so do (Responses: `incomplete`, reason `max_output_tokens`).
        self.cut_short = response.finish_reason == "length"
        if response.model_id is not None:  # a fallback answered (see providers.failover)
            self.answered_by = response.model_id
        return [valid_args(part) for part in response.parts]

    async def _take(
        self, event: ProviderEvent, builder: PartsBuilder, request: ModelRequest
    ) -> None:
        """One valid event of the model's stream: relayed and counted."""
        if isinstance(event, StreamReset):
            await self._restart(event, builder, request)
            return
        await self._relay(event, builder)
        self.meter.streamed(event)

    async def _restart(
        self, reset: StreamReset, builder: PartsBuilder, request: ModelRequest
    ) -> None:
        """A fallback answers a call that failed mid-stream: the partial attempt is booked
        and dropped, here and in every reader (`step_reset`)."""
        self.meter.restart(builder.build(), request)
        builder.feed(reset)
        self.answered_by = reset.model_id
        self.replaced.append({"model": reset.failed_model_id, "error": reset.code})
        event = StepReset(
            run_id=self.ctx.run_id,
            message_id=self.message_id,
            message=self.snapshot(),
            model=reset.model_id,
            failed_model=reset.failed_model_id,
            code=reset.code,
        )
        await self.sink.emit(event)

    async def _relay(self, event: ProviderEvent, builder: PartsBuilder) -> None:
        """Fold one provider event into the parts and tell the sink what it shows."""
        started = builder.feed(event)
        if isinstance(event, TextDelta):
            if event.text:
                await self.sink.emit(
                    TextDeltaEvent.of(self.ctx.run_id, self.message_id, event.text)
                )
        elif isinstance(event, ThinkingDelta):
            if event.text:
                await self.sink.emit(
                    ThinkingDeltaEvent(
                        run_id=self.ctx.run_id, message_id=self.message_id, delta=event.text
                    )
                )
        elif isinstance(event, ToolCallDelta):
            call = started or builder.call_for(event.index)
            if started is not None:
                data = ToolData(toolName=started.name, toolCallId=started.id, status="loading")
                await self.sink.emit(
                    ToolStart(
                        run_id=self.ctx.run_id,
                        message_id=self.message_id,
                        part=ToolPart(id=started.id, data=data),
                    )
                )
            if event.args_delta and call is not None:
                await self.sink.emit(
                    ToolArgsDelta(
                        run_id=self.ctx.run_id,
                        message_id=self.message_id,
                        tool_call_id=call.id,
                        delta=event.args_delta,
                    )
                )

    # -- tools ----------------------------------------------------------------------

    async def _settle_tool_calls(self, calls: list[ToolPart], client_names: set[str]) -> bool:
        """Run server calls, park client calls; True when something waits for a human."""
        waiting = False
        server: list[ToolPart] = []
        for part in calls:
            name = part.data.toolName
            if part.data.status == "error":  # arguments were not valid JSON
                await self._tool_error(part, part.data.bodyContent or "invalid arguments")
            elif self.tools.knows(name) and name not in client_names:
                server.append(part)
            elif name in client_names:
                # The browser runs it and posts the result: AIKit's "waiting for submission"
                # (`waitingConfirmation` is a human's approval of a server tool).
                self._replace(part, status="waitingSubmission")
                await self.sink.emit(
                    ConfirmRequired(
                        run_id=self.ctx.run_id,
                        kind="client_tool",
                        message_id=self.message_id,
                        part=self._find(part.id),
                        summary=f"The assistant wants to use {name}.",
                    )
                )
                waiting = True
            else:
                names = {spec.name for spec in self.tools.specs(self.ctx)} | client_names
                problem = unknown_tool(name, names)
                self._replace(part, status="error", result={"error": problem}, body_content=problem)
                await self._tool_error(self._find(part.id), problem)
        outcomes = await asyncio.gather(*(self.tools.invoke(p, self.ctx) for p in server))
        for part, outcome in zip(server, outcomes, strict=True):
            if isinstance(outcome, ApprovalNeeded | InputNeeded):  # a person must act
                changes, announced = waiting_changes(outcome, part)
                self._replace(part, **changes)
                await self.sink.emit(
                    ConfirmRequired(
                        run_id=self.ctx.run_id,
                        message_id=self.message_id,
                        part=self._find(part.id),
                        **announced,
                    )
                )
                waiting = True
            elif isinstance(outcome, BackgroundStarted):
                await self._backgrounded(part, outcome)
                waiting = True
            else:
                await self._finish_call(part, outcome)
        return waiting

    async def _backgrounded(self, part: ToolPart, started: BackgroundStarted) -> None:
        """The call runs on as a background job: its part stays `loading`, now naming it."""
        args = started.args if started.args is not None else part.data.args
        self._replace(part, args=args, body_content=started.summary, job_id=started.job_id)
        ids = {"run_id": self.ctx.run_id, "message_id": self.message_id}
        update = PartUpdate(part=self._find(part.id), cause="background_started", **ids)
        await self.sink.emit(update)

    async def _finish_call(self, part: ToolPart, outcome: ToolOutcome) -> None:
        self._replace(
            part,
            status=outcome.status,
            result=outcome.result,
            args=outcome.args if outcome.args is not None else part.data.args,
            body_content=outcome.error,
            mutates=outcome.mutates,
            job_id=outcome.job_id,
        )
        updated = self._find(part.id)
        if outcome.status == "error":
            await self._tool_error(updated, outcome.error or "the tool failed")
        else:
            await self.sink.emit(
                ToolEnd(
                    run_id=self.ctx.run_id,
                    message_id=self.message_id,
                    part=updated,
                    mutates=outcome.mutates,
                )
            )

    async def _tool_error(self, part: ToolPart, error: str) -> None:
        await self.sink.emit(
            ToolError(run_id=self.ctx.run_id, message_id=self.message_id, part=part, error=error)
        )

    def _find(self, tool_call_id: str) -> ToolPart:
        for p in self.parts:
            if isinstance(p, ToolPart) and p.id == tool_call_id:
                return p
        raise KeyError(tool_call_id)

    def _replace(self, part: ToolPart, **changes: object) -> None:
        data = self._find(part.id).data.model_copy(
            update={DATA_FIELDS[k]: v for k, v in changes.items()}
        )
        for i, p in enumerate(self.parts):
            if isinstance(p, ToolPart) and p.id == part.id:
                self.parts[i] = ToolPart(id=p.id, data=data)

    # -- state ----------------------------------------------------------------------

    def snapshot(self, *, interrupted: RunStatus | None = None) -> Message:
        """The assistant message as it stands; with `interrupted`, a partial answer.

        For a cut-short run the text streamed so far is kept and every tool call without
        a result is closed as `cancelled`, so the history stays valid for every provider.
        """
        parts = list(self.parts)
        if interrupted is not None and self._builder is not None:
            # A call still streaming never ran, whatever its half-sent arguments parse to.
            partial = self._builder.build().parts
            parts.extend(close_dangling(p, force=True) for p in partial)
        metadata: dict[str, object] = {"model": self.answered_by or self.model.id}
        if self.answered_by is not None:
            metadata["fallback_from"] = self.model.id
        if self.replaced:  # partial answers failover took back (they are not in `parts`)
            metadata["replaced_attempts"] = list(self.replaced)
        if self.cut_short:
            metadata["finish_reason"] = "length"
        if self.refused is not None:
            metadata["finish_reason"] = "content_filter"
            metadata["refusal"] = self.refused
        if interrupted is None:  # it waits for a person or a background job
            metadata.update(awaiting(parts))
            if any(waits_for_human(p) for p in parts):
                metadata["finish_reason"] = "requires_action"
        if interrupted is not None:
            parts = [close_dangling(p) for p in parts]
            metadata["status"] = "incomplete"
            metadata["reason"] = interrupted
        return Message(id=self.message_id, role="assistant", content=parts, metadata=metadata)
