"""The server tool runtime: what the agent loop calls for every server tool call.

    invoke(part, ctx)
      -> is the tool offered to this caller and model?      no  -> error outcome
      -> pin scope arguments, then validate                 bad -> error outcome (never runs)
      -> policy confirm                                      -> stored approval, ApprovalNeeded
      -> policy propose (or a mutating tool in propose mode) -> stored proposal, receipt
      -> auto: run in its own transaction, with a timeout    -> success / error outcome
         (the tool asks the user mid-call: InputRequired)     -> stored question, InputNeeded
      -> auto, a `long_running` tool                         -> background job, the turn
                                                               ends (`app.toolruntime.background`);
                                                               stateless: a receipt naming the job
      (an approved `long_running` call becomes a background job the same way)

A `confirm` tool stays `confirm` in a propose-mode conversation: only a stored approval,
decided through the API, ever runs it (`app.toolruntime.approvals`). Invoking the same
tool call again (a replay) never creates a second approval or proposal: the stored one
answers (`asking`, `proposing`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from pydantic import BaseModel

from app.domain.identity import Caller, ForwardedIdentity, IdentityForwarder
from app.domain.parts import ToolPart
from app.domain.stream import ToolSpec
from app.domain.tooling import (
    BackgroundStarted,
    CallSite,
    InputNeeded,
    Invoked,
    RunContext,
    ToolOutcome,
)
from app.store.database import Database
from app.toolruntime.answer_seal import AnswerSeal
from app.toolruntime.asking import ask_approval
from app.toolruntime.audit import audit_call
from app.toolruntime.outcomes import error_outcome, jsonable
from app.toolruntime.proposing import propose
from app.tools.base import (
    InputRequired,
    ServerTool,
    ToolContext,
    ToolFailure,
    UserAnswer,
    visible_args,
)
from app.tools.catalog import ToolCatalog
from app.tools.pinning import InvalidArguments, effective_scope, pin_and_validate

log = logging.getLogger("chat_bff.tools")


class Background(Protocol):
    """Where `long_running` calls go (`app.toolruntime.background.BackgroundJobs`)."""

    async def start(
        self, tool: ServerTool[Any], args: BaseModel, site: CallSite, *, launch: bool = True
    ) -> BackgroundStarted | ToolOutcome: ...

    def launch(
        self, job_id: str, tool: ServerTool[Any], args: BaseModel, site: CallSite
    ) -> None: ...

    async def cancel_run(self, owner_id: str, run_id: str) -> None: ...


class ServerToolRuntime:
    """Implements `app.agent.ports.ToolRuntime` over a `ToolCatalog` and the database."""

    def __init__(
        self,
        catalog: ToolCatalog,
        db: Database,
        *,
        default_timeout: float = 30.0,
        approval_ttl_seconds: float = 3600.0,
        forwarder: IdentityForwarder | None = None,
        background_timeout: float = 3600.0,
        answer_seal: AnswerSeal | None = None,
    ) -> None:
        self.forwarder = forwarder
        # What is kept of answers to tools' questions (`app.toolruntime.answer_seal`).
        self.answer_seal = answer_seal or AnswerSeal()
        self.background_timeout = background_timeout
        # Set by the container; without it a long-running tool runs inside the turn.
        self.background: Background | None = None
        self.catalog = catalog
        self.db = db
        self.default_timeout = default_timeout
        self.approval_ttl = timedelta(seconds=approval_ttl_seconds)
        self._last_position = 0

    def _next_position(self) -> int:
        # Strictly increasing within the process; nanoseconds order calls across processes.
        self._last_position = max(time.time_ns(), self._last_position + 1)
        return self._last_position

    def timeout_for(self, tool: ServerTool[Any]) -> float:
        if tool.timeout is not None:
            return tool.timeout
        return self.background_timeout if tool.long_running else self.default_timeout

    # -- what the model may see -------------------------------------------------------

    def specs(self, ctx: RunContext) -> list[ToolSpec]:
        return self.catalog.specs(ctx.caller, ctx.model_id)

    def knows(self, name: str) -> bool:
        return self.catalog.knows(name)

    # -- the call -----------------------------------------------------------------------

    async def run_cancelled(self, owner_id: str, run_id: str) -> None:
        """Close the stopped run's pending approvals (deciding one later must not run it)
        and stop its background jobs."""
        async with self.db.write() as tx:
            await tx.approvals.cancel_pending(owner_id, run_id=run_id, now=datetime.now(UTC))
            await tx.elicitations.cancel_pending(owner_id, run_id=run_id, now=datetime.now(UTC))
        if self.background is not None:
            await self.background.cancel_run(owner_id, run_id)

    async def invoke(self, part: ToolPart, ctx: RunContext) -> Invoked:
        # Taken before any await, so parallel calls keep the order the model made them in.
        position = self._next_position()
        name = part.data.toolName
        tool = self.catalog.permitted(name, ctx.caller, ctx.model_id)
        if tool is None:
            return error_outcome(f"The tool `{name}` is not available.")
        site = CallSite(
            caller=ctx.caller,
            scope=effective_scope(ctx.caller, ctx.conversation_id, ctx.scope),
            conversation_id=ctx.conversation_id,
            run_id=ctx.run_id,
            tool_call_id=part.id,
            model_id=ctx.model_id,
        )
        try:
            args, _ = pin_and_validate(tool, part.data.args or {}, site.scope)
        except InvalidArguments as exc:
            return error_outcome(str(exc))
        if tool.policy == "confirm":
            expires_at = datetime.now(UTC) + self.approval_ttl
            return await ask_approval(self.db, site, tool, args, expires_at=expires_at)
        if tool.policy == "propose" or (ctx.mode == "propose" and tool.mutates):
            return await propose(self.db, site, tool, args, position=position)
        if tool.long_running and self.background is not None:
            return await self.background.start(tool, args, site)
        return await self.run_or_ask(tool, args, site)

    def identity_for(self, tool: ServerTool[Any], caller: Caller) -> ForwardedIdentity | None:
        """The identity the tool asked to forward; a ToolFailure (the call fails, the
        handler never runs) when this caller's cannot be forwarded."""
        if tool.forward_identity == "off":
            return None
        identity = (
            self.forwarder.forward(caller, tool.forward_identity, tool.audience)
            if self.forwarder is not None
            else None
        )
        if identity is None:
            raise ToolFailure(
                f"The tool `{tool.name}` acts as the user and this deployment cannot forward "
                "the user's identity for this request."
            )
        return identity

    async def execute(self, tool: ServerTool[Any], args: BaseModel, site: CallSite) -> ToolOutcome:
        """Run the handler in one transaction with the tool's timeout; never raises for
        the tool's own failure (that is an error outcome the model may recover from).
        A mutating call is audited, however it ended. A question the tool asks here (a
        decided approval, an applied batch) has nobody to answer it: an error outcome."""
        outcome = await self.run_or_ask(tool, args, site, asking=False)
        assert isinstance(outcome, ToolOutcome)
        return outcome

    async def run_or_ask(
        self,
        tool: ServerTool[Any],
        args: BaseModel,
        site: CallSite,
        *,
        answer: UserAnswer | None = None,
        asking: bool = True,
    ) -> ToolOutcome | InputNeeded:
        """As `execute`, but a question the tool asks mid-call in a stored conversation is
        stored (with what the tool needs to continue) and waits for the user's answer;
        `answer` calls the tool again with one."""
        shown = visible_args(tool, args.model_dump(mode="json"))
        outcome = await self._run_handler(tool, args, shown, site, answer)
        if isinstance(outcome, InputRequired):
            if asking and site.conversation_id is not None:
                return await self._ask(tool, args, shown, site, outcome)
            outcome = error_outcome(
                f"The tool `{tool.name}` asked the user a question, which can only be "
                "answered in a stored conversation.",
                args=shown,
            )
        if tool.mutates:
            await audit_call(self.db, tool, args, outcome, site)
        return outcome

    async def _ask(
        self,
        tool: ServerTool[Any],
        args: BaseModel,
        shown: dict[str, Any],
        site: CallSite,
        asked: InputRequired,
    ) -> InputNeeded:
        async with self.db.write() as tx:
            record = await tx.elicitations.ask(
                site,
                tool_name=tool.name,
                args=args.model_dump(mode="json"),
                message=asked.message,
                requested_schema=asked.requested_schema,
                state=asked.state,
            )
        return InputNeeded(
            elicitation_id=record.id,
            message=record.message,
            requested_schema=record.requested_schema,
            args=shown,
        )

    async def _run_handler(
        self,
        tool: ServerTool[Any],
        args: BaseModel,
        shown: dict[str, Any],
        site: CallSite,
        answer: UserAnswer | None,
    ) -> ToolOutcome | InputRequired:
        timeout = self.timeout_for(tool)
        try:
            identity = self.identity_for(tool, site.caller)
            async with asyncio.timeout(timeout), self.db.write() as tx:
                ctx = ToolContext(site=site, tx=tx, identity=identity, answer=answer)
                result = jsonable(await tool.handler(args, ctx))
        except InputRequired as asked:
            return asked
        except ToolFailure as exc:
            return error_outcome(str(exc), args=shown)
        except TimeoutError:
            return error_outcome(
                f"The tool `{tool.name}` timed out after {timeout:g}s.", args=shown
            )
        except Exception as exc:
            log.warning(
                "server tool failed",
                extra={"tool": tool.name, "error_type": type(exc).__name__},
                exc_info=True,
            )
            return error_outcome(f"The tool `{tool.name}` failed unexpectedly.", args=shown)
        return ToolOutcome(status="success", result=result, mutates=tool.mutates, args=shown)
