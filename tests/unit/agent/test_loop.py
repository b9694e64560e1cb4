"""The tool loop, driven by a scripted model and a small fake tool runtime."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from app.agent.loop import Agent
from app.agent.turn import TurnOptions
from app.domain.events import (
    ConfirmRequired,
    RunEvent,
    TextDeltaEvent,
    ToolArgsDelta,
    ToolEnd,
    ToolError,
)
from app.domain.identity import Caller
from app.domain.messages import Message
from app.domain.models import ModelInfo
from app.domain.parts import TextPart, ToolPart
from app.domain.stream import ModelRequest, ToolSpec, no_options
from app.domain.tooling import ApprovalNeeded, RunContext, ToolOutcome
from app.providers.scripted import Script, ScriptedProvider, ScriptedToolCall, ScriptedTurn

MODEL = ModelInfo(id="test-model", provider="scripted", upstream_model="scripted-test")
WEATHER = ToolSpec(name="get_weather", description="Weather for a city.")

Handler = Callable[[ToolPart], Any]


@dataclass
class Sink:
    events: list[RunEvent] = field(default_factory=list)

    async def emit(self, event: RunEvent) -> None:
        self.events.append(event)

    def of(self, kind: type[Any]) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]


@dataclass
class FakeTools:
    """Server tools by name; a handler returns a ToolOutcome / ApprovalNeeded (maybe async)."""

    handlers: dict[str, Handler] = field(default_factory=dict)
    calls: list[ToolPart] = field(default_factory=list)

    def specs(self, ctx: RunContext) -> list[ToolSpec]:
        return [ToolSpec(name=name) for name in self.handlers]

    def knows(self, name: str) -> bool:
        return name in self.handlers

    async def run_cancelled(self, owner_id: str, run_id: str) -> None:
        return None

    async def invoke(self, part: ToolPart, ctx: RunContext) -> ToolOutcome | ApprovalNeeded:
        self.calls.append(part)
        outcome = self.handlers[part.data.toolName](part)
        if asyncio.iscoroutine(outcome):
            outcome = await outcome
        assert isinstance(outcome, ToolOutcome | ApprovalNeeded)
        return outcome


def script(*turns: ScriptedTurn) -> ScriptedProvider:
    return ScriptedProvider(Script(mode="sequence", turns=list(turns)), delay_ms=0)


def call(name: str, args: dict[str, Any] | str | None = None, id: str | None = None) -> Any:
    return ScriptedToolCall(name=name, args=args if args is not None else {}, id=id)


def make_agent(
    provider: ScriptedProvider,
    tools: FakeTools | None = None,
    *,
    client_tools: list[ToolSpec] | None = None,
    max_iterations: int = 8,
) -> tuple[Agent, Sink]:
    sink = Sink()
    agent = Agent(
        provider=provider,
        model=MODEL,
        tools=tools or FakeTools(),
        sink=sink,
        ctx=RunContext(caller=Caller(user_id="u1"), run_id="run_1", conversation_id=None),
        message_id="msg_1",
        options=TurnOptions(max_iterations=max_iterations, client_tools=client_tools or []),
    )
    return agent, sink


def ask(text: str = "Hello") -> list[Message]:
    return [Message(role="user", content=text)]


def only_tool(message: Message) -> ToolPart:
    parts = message.tool_parts()
    assert len(parts) == 1, parts
    return parts[0]


async def test_a_text_answer_completes_with_one_text_part() -> None:
    provider = script(ScriptedTurn(text="Hi there, friend."))
    agent, sink = make_agent(provider)

    result = await agent.run(ask())

    assert result.status == "completed"
    assert result.message.text() == "Hi there, friend."
    assert [type(p) for p in result.message.parts()] == [TextPart]
    assert "".join(e.delta for e in sink.of(TextDeltaEvent)) == "Hi there, friend."
    provider.assert_all_used()


async def test_a_client_tool_call_waits_for_the_browsers_submission() -> None:
    provider = script(ScriptedTurn(tool_calls=[call("get_weather", {"city": "Oslo"}, "c1")]))
    agent, sink = make_agent(provider, client_tools=[WEATHER])

    result = await agent.run(ask())

    assert result.status == "requires_action"
    part = only_tool(result.message)
    assert part.data.status == "waitingSubmission"  # the browser runs it, not a human's yes
    assert part.data.args == {"city": "Oslo"}
    assert "finish_reason" not in (result.message.metadata or {})
    [confirm] = sink.of(ConfirmRequired)
    assert confirm.kind == "client_tool"
    assert confirm.part.id == "c1"
    provider.assert_all_used()


async def test_a_server_tool_result_reaches_the_next_model_call() -> None:
    provider = script(
        ScriptedTurn(tool_calls=[call("add", {"a": 2, "b": 3}, "c1")]),
        ScriptedTurn(text="It is 5."),
    )
    tools = FakeTools({"add": lambda p: ToolOutcome("success", {"sum": 5})})
    agent, sink = make_agent(provider, tools)

    result = await agent.run(ask("2+3?"))

    assert result.status == "completed"
    [end] = sink.of(ToolEnd)
    assert end.part.data.status == "success"
    assert end.part.data.result == {"sum": 5}
    seen = provider.requests[1].messages[-1]
    assert seen.role == "assistant"
    assert only_tool(seen).data.result == {"sum": 5}
    assert result.message.text() == "It is 5."
    provider.assert_all_used()


async def test_a_tool_error_goes_back_to_the_model_which_recovers() -> None:
    provider = script(
        ScriptedTurn(tool_calls=[call("add", {"a": "x"}, "c1")]),
        ScriptedTurn(text="Sorry, let me answer without it."),
    )
    tools = FakeTools(
        {"add": lambda p: ToolOutcome("error", {"error": "a: not a number"}, error="bad a")}
    )
    agent, sink = make_agent(provider, tools)

    result = await agent.run(ask())

    assert result.status == "completed"
    [error] = sink.of(ToolError)
    assert error.part.data.status == "error"
    assert error.error == "bad a"
    assert only_tool(provider.requests[1].messages[-1]).data.status == "error"
    provider.assert_all_used()


async def test_invalid_json_arguments_never_invoke_the_tool() -> None:
    provider = script(
        ScriptedTurn(tool_calls=[call("add", '{"a": 1, "b": ', "c1")]),
        ScriptedTurn(text="Let me fix that."),
    )
    tools = FakeTools({"add": lambda p: ToolOutcome("success", 0)})
    agent, sink = make_agent(provider, tools)

    result = await agent.run(ask())

    assert tools.calls == []
    part = only_tool(result.message)
    assert part.data.status == "error"
    assert part.data.bodyContent
    assert len(sink.of(ToolError)) == 1
    assert len(provider.requests) == 2
    provider.assert_all_used()


async def test_an_unknown_tool_gets_an_error_result() -> None:
    provider = script(
        ScriptedTurn(tool_calls=[call("launch_rockets", {}, "c1")]),
        ScriptedTurn(text="I cannot do that."),
    )
    agent, sink = make_agent(provider)

    result = await agent.run(ask())

    part = only_tool(result.message)
    assert part.data.status == "error"
    assert "launch_rockets" in str(part.data.result)
    assert sink.of(ToolError)[0].part.id == "c1"
    assert result.status == "completed"


async def test_a_malformed_answer_is_retried_once_with_the_error_then_fails() -> None:
    provider = script(
        ScriptedTurn(tool_calls=[call("add", '{"a": 1,', "c1")]),
        ScriptedTurn(tool_calls=[call("launch_rockets", {}, "c2")]),
        ScriptedTurn(text="never asked for"),
    )
    tools = FakeTools({"add": lambda p: ToolOutcome("success", 0)})
    agent, sink = make_agent(provider, tools)

    result = await agent.run(ask())

    assert result.status == "failed"
    assert result.error_code == "malformed_tool_call"
    assert result.note
    assert len(provider.requests) == 2  # the first answer and one retry, no third call
    # The retry was asked with the first error in the history, as the call's result.
    retry_history = str(provider.requests[1].messages)
    assert "not valid JSON" in retry_history
    assert [p.data.status for p in result.message.tool_parts()] == ["error", "error"]
    assert [e.part.id for e in sink.of(ToolError)] == ["c1", "c2"]
    assert tools.calls == []


async def test_a_good_call_between_malformed_ones_resets_the_retry() -> None:
    provider = script(
        ScriptedTurn(tool_calls=[call("add", "not json", "c1")]),
        ScriptedTurn(tool_calls=[call("add", {"a": 1}, "c2")]),
        ScriptedTurn(tool_calls=[call("add", "still not json", "c3")]),
        ScriptedTurn(text="Done: 1."),
    )
    tools = FakeTools({"add": lambda p: ToolOutcome("success", 1)})
    agent, _ = make_agent(provider, tools)

    result = await agent.run(ask())

    assert result.status == "completed"
    assert result.message.text() == "Done: 1."
    assert [p.id for p in tools.calls] == ["c2"]
    provider.assert_all_used()


async def test_parallel_server_calls_run_concurrently() -> None:
    barrier = asyncio.Barrier(2)

    async def meet(part: ToolPart) -> ToolOutcome:
        # Passes only when both calls are in flight at once.
        await asyncio.wait_for(barrier.wait(), timeout=5)
        return ToolOutcome("success", part.data.args)

    provider = script(
        ScriptedTurn(tool_calls=[call("lookup", {"q": 1}, "c1"), call("lookup", {"q": 2}, "c2")]),
        ScriptedTurn(text="Both done."),
    )
    agent, sink = make_agent(provider, FakeTools({"lookup": meet}))

    result = await agent.run(ask())

    assert result.status == "completed"
    assert sorted(e.part.id for e in sink.of(ToolEnd)) == ["c1", "c2"]


async def test_the_iteration_cap_counts_model_calls() -> None:
    provider = script(*(ScriptedTurn(tool_calls=[call("ping", {}, f"c{i}")]) for i in range(3)))
    agent, _ = make_agent(
        provider, FakeTools({"ping": lambda p: ToolOutcome("success", "pong")}), max_iterations=3
    )

    result = await agent.run(ask())

    assert result.status == "max_iterations"
    assert len(provider.requests) == 3
    assert result.usage.model_calls == 3
    assert result.note
    provider.assert_all_used()


async def test_a_tool_needing_approval_pauses_the_run() -> None:
    provider = script(ScriptedTurn(tool_calls=[call("delete_node", {"id": "n1"}, "c1")]))
    tools = FakeTools(
        {"delete_node": lambda p: ApprovalNeeded("apr_1", "Delete node n1", expires_at=None)}
    )
    agent, sink = make_agent(provider, tools)

    result = await agent.run(ask())

    assert result.status == "requires_action"
    assert only_tool(result.message).data.status == "waitingConfirmation"
    [confirm] = sink.of(ConfirmRequired)
    assert confirm.kind == "approval"
    assert confirm.approval_id == "apr_1"
    provider.assert_all_used()


async def test_a_call_cut_short_mid_arguments_is_cancelled_not_an_error() -> None:
    provider = ScriptedProvider(
        Script(
            mode="sequence",
            turns=[ScriptedTurn(tool_calls=[call("get_weather", {"city": "Oslo"}, "c1")])],
        ),
        delay_ms=200,
    )
    agent, sink = make_agent(provider, client_tools=[WEATHER])
    task = asyncio.create_task(agent.run(ask()))
    while not sink.of(ToolArgsDelta):
        await asyncio.sleep(0.01)
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task

    partial = agent.snapshot(interrupted="cancelled")

    part = only_tool(partial)
    assert part.data.status == "cancelled"
    assert partial.metadata is not None
    assert partial.metadata["status"] == "incomplete"


async def test_a_plain_turns_model_request_holds_a_small_set_of_given_names() -> None:
    """A request lives as long as its call streams, with pydantic's set of the names it
    was given: past four names that set takes 728 bytes instead of 216, per open stream.
    What it leaves out are the defaults: the request is the one given every name."""
    provider = script(ScriptedTurn(text="Hi."))
    agent, _ = make_agent(provider)

    await agent.run(ask())

    sent = provider.requests[-1]
    spelled_out = ModelRequest(
        model=sent.model,
        messages=sent.messages,
        tools=[],
        tool_choice=None,
        max_output_tokens=sent.max_output_tokens,
        temperature=None,
        parallel_tool_calls=None,
        options=no_options(),
    )
    assert sent == spelled_out
    assert sys.getsizeof(sent.model_fields_set) <= sys.getsizeof({"a", "b", "c", "d"})
