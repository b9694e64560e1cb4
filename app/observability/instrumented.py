"""Wrappers that measure every model call and every tool call, so no caller has to.

`InstrumentedProvider(inner, metrics)` is what the container hands out for each provider.
Per call it records: latency (until the stream ends, fails or is closed), time to first
token (the first text, thinking or tool-call delta), tokens in and out (usage reports are
cumulative per call: the largest value of each field counts, once, at the end) and
`ProviderError`s by code. Labels are the provider name and the upstream model name, both
from the catalogue, never from user input.

Anything else (a scripted provider's `requests`, `assert_all_used`) is delegated to the
wrapped provider.

`InstrumentedTools(inner, metrics)` wraps the tool runtime the run manager uses and counts
each server tool call by tool and outcome: `success`, `error`, `approval_needed`,
`cancelled`, `crashed` (the runtime itself raised). A name the runtime does not know is
counted as `unknown`, so a model cannot mint label values. It offers the `ToolRuntime`
protocol and nothing more: what the runtime offers beyond it (the tool catalogue, the
approval and proposal services) the container hands out directly.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import Any

from app.agent.ports import ToolRuntime
from app.domain.errors import ProviderError
from app.domain.parts import ToolPart
from app.domain.stream import (
    ModelRequest,
    ProviderEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    ToolSpec,
    Usage,
)
from app.domain.tooling import ApprovalNeeded, BackgroundStarted, InputNeeded, Invoked, RunContext
from app.observability.metrics import Metrics
from app.providers.base import Provider


class InstrumentedProvider:
    def __init__(self, inner: Provider, metrics: Metrics) -> None:
        self.inner = inner
        self.name = inner.name
        self.supports = inner.supports
        self._metrics = metrics

    async def stream(self, request: ModelRequest) -> AsyncGenerator[ProviderEvent, None]:
        started = time.perf_counter()
        first_token = True
        input_tokens = output_tokens = 0
        try:
            async with aclosing(self.inner.stream(request)) as events:
                async for event in events:
                    if first_token and isinstance(event, TextDelta | ThinkingDelta | ToolCallDelta):
                        first_token = False
                        self._metrics.observe_ttft(request.model, time.perf_counter() - started)
                    elif isinstance(event, Usage):
                        input_tokens = max(input_tokens, event.input_tokens)
                        output_tokens = max(output_tokens, event.output_tokens)
                    yield event
        except ProviderError as exc:
            self._metrics.provider_error(self.name, request.model, exc.code)
            raise
        finally:
            self._metrics.observe_provider_call(
                self.name, request.model, time.perf_counter() - started
            )
            self._metrics.add_tokens(
                request.model, input_tokens=input_tokens, output_tokens=output_tokens
            )

    async def aclose(self) -> None:
        await self.inner.aclose()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def instrument(providers: dict[str, Provider], metrics: Metrics) -> dict[str, Provider]:
    return {name: InstrumentedProvider(p, metrics) for name, p in providers.items()}


class InstrumentedTools:
    def __init__(self, inner: ToolRuntime, metrics: Metrics) -> None:
        self.inner = inner
        self._metrics = metrics

    def specs(self, ctx: RunContext) -> list[ToolSpec]:
        return self.inner.specs(ctx)

    def knows(self, name: str) -> bool:
        return self.inner.knows(name)

    async def run_cancelled(self, owner_id: str, run_id: str) -> None:
        await self.inner.run_cancelled(owner_id, run_id)

    async def invoke(self, part: ToolPart, ctx: RunContext) -> Invoked:
        name = part.data.toolName if self.inner.knows(part.data.toolName) else "unknown"
        try:
            result = await self.inner.invoke(part, ctx)
        except asyncio.CancelledError:
            self._metrics.tool_call(name, "cancelled")
            raise
        except Exception:
            self._metrics.tool_call(name, "crashed")
            raise
        if isinstance(result, ApprovalNeeded):
            status = "approval_needed"
        elif isinstance(result, BackgroundStarted):
            status = "background"
        elif isinstance(result, InputNeeded):
            status = "input_needed"
        else:
            status = result.status
        self._metrics.tool_call(name, status)
        return result
