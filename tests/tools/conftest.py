"""Fixtures for the tool layer: a runtime over a migrated database (SQLite and Postgres,
from the `tests.fakes.db` plugin) with the example graph and a few test tools."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from pydantic import Field
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from app.domain.identity import Caller
from app.domain.messages import Message
from app.domain.parts import ToolPart, tool_part
from app.domain.tooling import RunContext
from app.examples.graph import tools as graph
from app.store.database import Database
from app.store.repos import ConversationRepo, MessageRepo
from app.toolruntime.runtime import ServerToolRuntime
from app.tools.access import ToolAccess
from app.tools.base import ServerTool, ToolArgs, ToolContext
from app.tools.catalog import ToolCatalog
from app.tools.registry import ToolRegistry

ALICE = Caller(user_id="alice", roles=frozenset({"user"}))
MALLORY = Caller(user_id="mallory", roles=frozenset({"user"}))


class TargetArgs(ToolArgs):
    target: str = Field(description="What to act on.")
    user_id: str | None = Field(default=None, description="Pinned.")


class NapArgs(ToolArgs):
    seconds: float = Field(default=0.2, description="How long to sleep.")


@dataclass
class Calls:
    """What the test tools' handlers saw: a handler that never ran left nothing here."""

    danger: list[dict[str, Any]] = field(default_factory=list)
    echo: list[dict[str, Any]] = field(default_factory=list)


def sample_tools(calls: Calls) -> list[ServerTool[Any]]:
    async def danger(args: TargetArgs, ctx: ToolContext) -> dict[str, Any]:
        calls.danger.append({"target": args.target, "user_id": args.user_id})
        return {"done": args.target}

    async def echo(args: TargetArgs, ctx: ToolContext) -> dict[str, Any]:
        calls.echo.append({"target": args.target, "user_id": args.user_id})
        return {"echo": args.target, "caller": ctx.caller.user_id}

    async def boom(args: NapArgs, ctx: ToolContext) -> None:
        raise RuntimeError("secret internal detail")

    async def nap(args: NapArgs, ctx: ToolContext) -> dict[str, float]:
        await asyncio.sleep(args.seconds)
        return {"slept": args.seconds}

    return [
        ServerTool(
            name="danger",
            description="A dangerous tool.",
            args_model=TargetArgs,
            handler=danger,
            policy="confirm",
            mutates=True,
        ),
        ServerTool(name="echo", description="Echo.", args_model=TargetArgs, handler=echo),
        ServerTool(name="boom", description="Always fails.", args_model=NapArgs, handler=boom),
        ServerTool(name="nap", description="Sleeps.", args_model=NapArgs, handler=nap),
        ServerTool(
            name="slow",
            description="Sleeps past its timeout.",
            args_model=NapArgs,
            handler=nap,
            timeout=0.05,
        ),
        ServerTool(
            name="admin_tool",
            description="Admins only.",
            args_model=NapArgs,
            handler=nap,
            roles=frozenset({"admin"}),
        ),
    ]


@pytest.fixture
def calls() -> Calls:
    return Calls()


@pytest.fixture
def registry(calls: Calls) -> ToolRegistry:
    registry = ToolRegistry()
    graph.register(registry)
    for tool in sample_tools(calls):
        registry.register(tool)
    return registry


MakeRuntime = Callable[..., ServerToolRuntime]


@pytest.fixture
def db(db_engine: AsyncEngine) -> Database:
    return Database(db_engine)


@pytest.fixture
def make_runtime(registry: ToolRegistry) -> MakeRuntime:
    def make(db: Database, *, ttl: float = 3600.0, **access: Any) -> ServerToolRuntime:
        return ServerToolRuntime(
            ToolCatalog(registry, ToolAccess(**access)),
            db,
            default_timeout=5.0,
            approval_ttl_seconds=ttl,
        )

    return make


@pytest.fixture
def runtime(make_runtime: MakeRuntime, db: Database) -> ServerToolRuntime:
    return make_runtime(db)


async def new_conversation(
    sessions: async_sessionmaker[AsyncSession], owner: str, *, mode: str = "auto"
) -> str:
    async with sessions.begin() as s:
        record = await ConversationRepo(s).create(owner, mode=mode)  # type: ignore[arg-type]
    return record.id


def run_ctx(
    caller: Caller,
    conversation_id: str | None,
    *,
    run_id: str = "run_1",
    mode: str = "auto",
    scope: dict[str, str] | None = None,
) -> RunContext:
    return RunContext(
        caller=caller,
        run_id=run_id,
        conversation_id=conversation_id,
        mode=mode,  # type: ignore[arg-type]
        scope=scope or {},
        model_id="scripted",
    )


def call(name: str, args: dict[str, Any] | None, call_id: str = "call_1") -> ToolPart:
    return tool_part(tool_call_id=call_id, tool_name=name, status="loading", args=args)


async def store_waiting(
    sessions: async_sessionmaker[AsyncSession],
    owner: str,
    conversation_id: str,
    *parts: ToolPart,
    run_id: str = "run_1",
    args: dict[str, dict[str, Any] | None] | None = None,
) -> Message:
    """Store the assistant message a paused run leaves: its tool parts wait for a human."""
    waiting = [
        ToolPart(
            id=p.id,
            data=p.data.model_copy(
                update={
                    "status": "waitingConfirmation",
                    "args": (args or {}).get(p.id, p.data.args),
                }
            ),
        )
        for p in parts
    ]
    message = Message(role="assistant", content=list(waiting))
    async with sessions.begin() as s:
        await MessageRepo(s).append(
            owner, conversation_id, Message(role="user", content="please"), run_id=run_id
        )
        await MessageRepo(s).append(owner, conversation_id, message, run_id=run_id)
    return message


async def stored_part(
    sessions: async_sessionmaker[AsyncSession], owner: str, conversation_id: str, call_id: str
) -> ToolPart:
    async with sessions() as s:
        history = await MessageRepo(s).history(owner, conversation_id)
    for message in reversed(history):
        for part in message.tool_parts():
            if part.id == call_id:
                return part
    raise AssertionError(f"no stored part {call_id}")
