"""The server tool runtime: what the agent loop calls for every server tool call.

    invoke(part, ctx)
      -> is the tool offered to this caller and model?      no  -> error outcome
      -> pin scope arguments, then validate                 bad -> error outcome (never runs)
      -> policy confirm                                      -> stored approval, ApprovalNeeded
      -> policy propose (or a mutating tool in propose mode) -> stored proposal, receipt
      -> auto: run in its own transaction, with a timeout    -> success / error outcome

A `confirm` tool stays `confirm` in a propose-mode conversation: only a stored approval,
decided through the API, ever runs it. Invoking the same tool call again (a replay) never
creates a second approval or proposal: the stored one answers.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic import BaseModel
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.domain.identity import Caller
from app.domain.parts import ToolPart
from app.domain.stream import ToolSpec
from app.domain.tooling import ApprovalNeeded, RunContext, ToolOutcome
from app.settings import Settings
from app.store.repos.audit import record_audit
from app.store.tool_repos import (
    ApprovalRecord,
    ApprovalRepo,
    ProposalRecord,
    ProposalRepo,
    lock_conversation,
)
from app.tools.base import (
    PROVISIONAL_PREFIX,
    ServerTool,
    ToolContext,
    ToolFailure,
    result_to_json,
)
from app.tools.pinning import InvalidArguments, args_hash, effective_scope, pin_and_validate
from app.tools.registry import ToolAccess, ToolRegistry, build_registry

log = logging.getLogger("chat_bff.tools")

REJECTED = "rejected by the user"


def error_outcome(message: str, *, args: dict[str, Any] | None = None, **extra: Any) -> ToolOutcome:
    return ToolOutcome(status="error", result={"error": message, **extra}, error=message, args=args)


def visible_args(tool: ServerTool[Any], args: Mapping[str, Any]) -> dict[str, Any]:
    """Arguments as the model and the UI see them: pinned scope values left out."""
    hidden = set(tool.declared_scope_args())
    return {k: v for k, v in args.items() if k not in hidden}


def jsonable(value: Any) -> Any:
    return json.loads(json.dumps(result_to_json(value), default=str))


class ServerToolRuntime:
    """Implements `app.agent.ports.ToolRuntime` over a `ToolRegistry`."""

    def __init__(
        self,
        registry: ToolRegistry,
        sessions: async_sessionmaker[AsyncSession],
        *,
        access: ToolAccess | None = None,
        default_timeout: float = 30.0,
        approval_ttl_seconds: float = 3600.0,
    ) -> None:
        self.registry = registry
        self.sessions = sessions
        self.access = access or ToolAccess()
        self.default_timeout = default_timeout
        self.approval_ttl = timedelta(seconds=approval_ttl_seconds)
        self._last_position = 0

    def _next_position(self) -> int:
        # Strictly increasing within the process; nanoseconds order calls across processes.
        self._last_position = max(time.time_ns(), self._last_position + 1)
        return self._last_position

    # -- what the model may see -------------------------------------------------------

    def available(self, caller: Caller, model_id: str = "") -> list[ServerTool[Any]]:
        return [t for t in self.registry.all() if self.access.permits(t, caller, model_id)]

    def specs(self, ctx: RunContext) -> list[ToolSpec]:
        return [
            ToolSpec(name=t.name, description=t.description, parameters=t.parameters_schema())
            for t in self.available(ctx.caller, ctx.model_id)
        ]

    def knows(self, name: str) -> bool:
        return name in self.registry and self.access.offered(name)

    def permitted(self, name: str, caller: Caller, model_id: str = "") -> ServerTool[Any] | None:
        tool = self.registry.get(name)
        if tool is None or not self.access.permits(tool, caller, model_id):
            return None
        return tool

    # -- the call -----------------------------------------------------------------------

    async def run_cancelled(self, owner_id: str, run_id: str) -> None:
        """Close the stopped run's pending approvals: deciding one later must not run it."""
        async with self.sessions.begin() as session:
            await ApprovalRepo(session).cancel_pending(
                owner_id, run_id=run_id, now=datetime.now(UTC)
            )

    async def invoke(self, part: ToolPart, ctx: RunContext) -> ToolOutcome | ApprovalNeeded:
        # Taken before any await, so parallel calls keep the order the model made them in.
        position = self._next_position()
        name = part.data.toolName
        tool = self.permitted(name, ctx.caller, ctx.model_id)
        if tool is None:
            return error_outcome(f"The tool `{name}` is not available.")
        scope = effective_scope(ctx.caller, ctx.conversation_id, ctx.scope)
        try:
            model, pinned = pin_and_validate(tool, part.data.args or {}, scope)
        except InvalidArguments as exc:
            return error_outcome(str(exc))
        if tool.policy == "confirm":
            return await self._request_approval(tool, model, pinned, scope, part, ctx)
        if tool.policy == "propose" or (ctx.mode == "propose" and tool.mutates):
            return await self._propose(tool, model, pinned, scope, part, ctx, position)
        return await self.execute(
            tool,
            model,
            caller=ctx.caller,
            scope=scope,
            conversation_id=ctx.conversation_id,
            run_id=ctx.run_id,
            tool_call_id=part.id,
            model_id=ctx.model_id,
        )

    async def execute(
        self,
        tool: ServerTool[Any],
        args: BaseModel,
        *,
        caller: Caller,
        scope: Mapping[str, str],
        conversation_id: str | None,
        run_id: str | None,
        tool_call_id: str | None,
        model_id: str = "",
    ) -> ToolOutcome:
        """Run the handler in one transaction with the tool's timeout; never raises for
        the tool's own failure (that is an error outcome the model may recover from)."""
        shown = visible_args(tool, args.model_dump(mode="json"))
        outcome = await self._run_handler(
            tool,
            args,
            shown,
            caller=caller,
            scope=scope,
            conversation_id=conversation_id,
            run_id=run_id,
            tool_call_id=tool_call_id,
            model_id=model_id,
        )
        if tool.mutates:
            await self._audit_call(
                tool, args, outcome, caller, conversation_id, run_id, tool_call_id
            )
        return outcome

    async def _run_handler(
        self,
        tool: ServerTool[Any],
        args: BaseModel,
        shown: dict[str, Any],
        *,
        caller: Caller,
        scope: Mapping[str, str],
        conversation_id: str | None,
        run_id: str | None,
        tool_call_id: str | None,
        model_id: str,
    ) -> ToolOutcome:
        timeout = tool.timeout if tool.timeout is not None else self.default_timeout
        try:
            async with asyncio.timeout(timeout), self.sessions.begin() as session:
                ctx = ToolContext(
                    caller=caller,
                    scope=dict(scope),
                    session=session,
                    conversation_id=conversation_id,
                    run_id=run_id,
                    tool_call_id=tool_call_id,
                    model_id=model_id,
                )
                result = jsonable(await tool.handler(args, ctx))
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

    async def _audit_call(
        self,
        tool: ServerTool[Any],
        args: BaseModel,
        outcome: ToolOutcome,
        caller: Caller,
        conversation_id: str | None,
        run_id: str | None,
        tool_call_id: str | None,
    ) -> None:
        """Who changed what through a mutating tool: its own transaction, so a failed
        call is on record too. The arguments are kept as a digest, never verbatim."""
        try:
            async with self.sessions.begin() as session:
                await record_audit(
                    session,
                    actor_id=caller.user_id,
                    action="tool.call",
                    target_type="tool",
                    target_id=tool.name,
                    details={
                        "conversation_id": conversation_id,
                        "run_id": run_id,
                        "tool_call_id": tool_call_id,
                        "args_digest": args_hash(args.model_dump(mode="json")),
                        "outcome": outcome.status,
                    },
                )
        except Exception:
            log.exception("could not audit a tool call", extra={"tool": tool.name})

    # -- confirm --------------------------------------------------------------------------

    async def _request_approval(
        self,
        tool: ServerTool[Any],
        model: BaseModel,
        pinned: dict[str, Any],
        scope: dict[str, str],
        part: ToolPart,
        ctx: RunContext,
    ) -> ToolOutcome | ApprovalNeeded:
        digest = args_hash(pinned)
        fields: dict[str, Any] = {
            "owner_id": ctx.caller.user_id,
            "conversation_id": ctx.conversation_id,
            "run_id": ctx.run_id,
            "tool_call_id": part.id,
            "tool_name": tool.name,
            "args": pinned,
            "args_hash": digest,
            "scope": scope,
            "model_id": ctx.model_id,
            "summary": tool.summary(model),
            "expires_at": datetime.now(UTC) + self.approval_ttl,
        }
        try:
            async with self.sessions.begin() as session:
                record = await ApprovalRepo(session).create_or_get(**fields)
        except IntegrityError:  # the same call, invoked twice at once: the other one won
            async with self.sessions.begin() as session:
                record = await ApprovalRepo(session).create_or_get(**fields)
        if record.args_hash != digest or record.tool_name != tool.name:
            return error_outcome("This tool call id was already used with other arguments.")
        return self._approval_answer(tool, record)

    def _approval_answer(
        self, tool: ServerTool[Any], record: ApprovalRecord
    ) -> ToolOutcome | ApprovalNeeded:
        shown = visible_args(tool, record.args)
        if record.status == "pending" and record.expires_at <= datetime.now(UTC):
            return error_outcome("The approval for this call expired.", args=shown)
        if record.status == "pending":
            return ApprovalNeeded(
                approval_id=record.id,
                summary=record.summary,
                expires_at=record.expires_at.timestamp(),
                args=shown,
            )
        # A replay of a decided call: the stored decision answers, nothing runs again.
        if record.status == "rejected":
            return error_outcome(REJECTED, args=shown, reason=record.reason)
        if record.status == "cancelled":
            return error_outcome("The call was cancelled before anyone decided.", args=shown)
        if record.outcome_status == "success":
            return ToolOutcome(
                status="success", result=record.result, mutates=tool.mutates, args=shown
            )
        result = record.result if isinstance(record.result, dict) else {}
        return error_outcome(str(result.get("error", "The tool did not finish.")), args=shown)

    # -- propose --------------------------------------------------------------------------

    async def _propose(
        self,
        tool: ServerTool[Any],
        model: BaseModel,
        pinned: dict[str, Any],
        scope: dict[str, str],
        part: ToolPart,
        ctx: RunContext,
        position: int,
    ) -> ToolOutcome:
        shown = visible_args(tool, pinned)
        if ctx.conversation_id is None:
            return error_outcome(
                f"`{tool.name}` can only be proposed inside a conversation.", args=shown
            )
        owner = ctx.caller.user_id
        async with self.sessions.begin() as session:
            # One proposer of this conversation at a time, so `queued` is exact.
            if not await lock_conversation(session, owner, ctx.conversation_id):
                return error_outcome("The conversation no longer exists.", args=shown)
            repo = ProposalRepo(session)
            record = await repo.by_call(owner, ctx.run_id, part.id)
            if record is None:
                record = await repo.add(
                    owner_id=owner,
                    conversation_id=ctx.conversation_id,
                    run_id=ctx.run_id,
                    tool_call_id=part.id,
                    tool_name=tool.name,
                    args=pinned,
                    scope=scope,
                    model_id=ctx.model_id,
                    summary=tool.summary(model),
                    provisional_id=(
                        f"{PROVISIONAL_PREFIX}{uuid.uuid4().hex}" if tool.creates else None
                    ),
                    position=position,
                )
            queued = await repo.count_pending(owner, ctx.conversation_id)
        return ToolOutcome(status="success", result=receipt(record, queued), args=shown)


def receipt(record: ProposalRecord, queued: int) -> dict[str, Any]:
    """The honest answer a proposed call gives the model: nothing was applied yet."""
    answer: dict[str, Any] = {
        "proposed": True,
        "proposal_id": record.id,
        "queued": queued,
        "summary": record.summary,
        "note": "Not applied yet: a human must approve the proposal queue.",
    }
    if record.provisional_id is not None:
        answer["provisional_id"] = record.provisional_id
    return answer


def build_tool_runtime(
    settings: Settings,
    sessions: async_sessionmaker[AsyncSession],
    *,
    registry: ToolRegistry | None = None,
) -> ServerToolRuntime:
    """The runtime for this deployment (the registry is built from settings unless given)."""
    return ServerToolRuntime(
        registry if registry is not None else build_registry(settings),
        sessions,
        access=ToolAccess.from_settings(settings),
        default_timeout=settings.tool_timeout_seconds,
        approval_ttl_seconds=settings.approval_ttl_seconds,
    )
