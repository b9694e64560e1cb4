"""The offline `scripted` provider: plays a script of turns with realistic pacing.

Two modes:
- `rules` (the offline default): each turn says when it applies (a regex on the last
  user text, or the tool whose results just came back); the first match plays.
- `sequence` (the test double): turns play in order, one per model call; a call past
  the end is an error, and `assert_all_used()` checks at the end that none was left.

It says what it is: its model id is `scripted`, never a real model's name.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections import deque
from collections.abc import AsyncGenerator
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from app.domain.errors import ProviderError, ProviderUnavailable
from app.domain.messages import Message
from app.domain.parts import ToolPart
from app.domain.stream import (
    Finish,
    GenerationOptions,
    ModelRequest,
    ProviderEvent,
    ResponseMeta,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    Usage,
)


class ScriptedToolCall(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    args: dict[str, Any] | str = Field(
        default_factory=dict, description="An object, or raw text (to script bad JSON)."
    )
    id: str | None = None


class ScriptedError(BaseModel):
    model_config = ConfigDict(extra="forbid")
    status: int = 500
    message: str = "scripted upstream failure"


class ScriptedTurn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    match: str | None = Field(default=None, description="Regex on the last user text.")
    after_tool: str | None = Field(
        default=None, description="Applies when results of this tool just came back."
    )
    thinking: str | None = None
    text: str | None = None
    tool_calls: list[ScriptedToolCall] = Field(default_factory=list)
    error: ScriptedError | None = None
    delay_ms: float | None = Field(default=None, description="Overrides the pacing.")
    stall_seconds: float = Field(default=0.0, description="Pause before the first chunk.")
    usage: Literal["reported", "absent"] = Field(
        default="reported", description="`absent` plays a provider that reports no usage."
    )
    cached_tokens: int = Field(default=0, ge=0, description="Prompt tokens reported as cached.")
    finish: Literal["length"] | None = Field(
        default=None, description="`length`: the answer stops at its output token limit."
    )


class Script(BaseModel):
    model_config = ConfigDict(extra="forbid")
    mode: Literal["rules", "sequence"] = "rules"
    turns: list[ScriptedTurn]


_RECENT_REQUESTS = 100


def load_script(path: Path | None) -> Script:
    if path is None:
        text = resources.files("app.providers").joinpath("default_script.json").read_text()
    else:
        text = path.read_text()
    return Script.model_validate_json(text)


def _chunks(text: str) -> list[str]:
    """Split like a tokenizer would, roughly: words with their leading space."""
    return re.findall(r"\s*\S+|\s+", text)


def _last_user_text(messages: list[Message]) -> str:
    for message in reversed(messages):
        if message.role == "user":
            return message.text()
    return ""


def _fresh_tool_results(messages: list[Message]) -> list[ToolPart]:
    """Tool parts of the last assistant message, if it is the last message at all."""
    if not messages or messages[-1].role != "assistant":
        return []
    return messages[-1].tool_parts()


class ScriptedProvider:
    """Plays `script`; `requests` keeps the most recent model requests for tests to read.

    Only the last 100 are kept: the scripted model is in every default catalogue, so a
    long-running server must not hold on to every request it was ever sent.
    """

    # A script plays the same whatever is asked: every option is accepted (and recorded).
    supports: frozenset[str] = frozenset(GenerationOptions.model_fields)

    name = "scripted"

    def __init__(self, script: Script, *, delay_ms: float = 20.0) -> None:
        self._script = script
        self._delay = delay_ms / 1000.0
        self._cursor = 0
        self._calls = 0
        self.requests: deque[ModelRequest] = deque(maxlen=_RECENT_REQUESTS)

    def _choose(self, request: ModelRequest) -> ScriptedTurn:
        if self._script.mode == "sequence":
            if self._cursor >= len(self._script.turns):
                raise AssertionError(
                    f"scripted provider: unscripted model call #{self._cursor + 1}"
                )
            turn = self._script.turns[self._cursor]
            self._cursor += 1
            return turn
        results = _fresh_tool_results(request.messages)
        if results:
            names = {p.data.toolName for p in results}
            for turn in self._script.turns:
                if turn.after_tool in names:
                    return turn
            return ScriptedTurn(text="Done.")
        user_text = _last_user_text(request.messages)
        for turn in self._script.turns:
            if (
                turn.after_tool is None
                and turn.match is not None
                and re.search(turn.match, user_text, flags=re.IGNORECASE)
            ):
                return turn
        for turn in self._script.turns:
            if turn.after_tool is None and turn.match is None:
                return turn
        return ScriptedTurn(text=f"(scripted) You said: {user_text}")

    def assert_all_used(self) -> None:
        left = len(self._script.turns) - self._cursor
        assert left == 0, f"scripted provider: {left} scripted turn(s) never played"

    async def stream(self, request: ModelRequest) -> AsyncGenerator[ProviderEvent, None]:
        self.requests.append(request)
        self._calls += 1
        turn = self._choose(request)
        delay = self._delay if turn.delay_ms is None else turn.delay_ms / 1000.0
        if turn.stall_seconds:
            await asyncio.sleep(turn.stall_seconds)
        if turn.error is not None:
            raise (
                ProviderUnavailable(
                    turn.error.message, provider=self.name, upstream_status=turn.error.status
                )
                if turn.error.status >= 500
                else ProviderError(
                    turn.error.message,
                    provider=self.name,
                    upstream_status=turn.error.status,
                    status=turn.error.status,
                )
            )
        yield ResponseMeta(response_id=f"scripted-{self._calls}", model="scripted")
        output = 0
        if turn.thinking:
            for piece in _chunks(turn.thinking):
                await _pace(delay)
                output += 1
                yield ThinkingDelta(text=piece)
        if turn.text:
            for piece in _chunks(turn.text):
                await _pace(delay)
                output += 1
                yield TextDelta(text=piece)
        for index, call in enumerate(turn.tool_calls):
            raw = call.args if isinstance(call.args, str) else json.dumps(call.args)
            call_id = call.id or f"call_scripted_{self._calls}_{index}"
            await _pace(delay)
            yield ToolCallDelta(index=index, id=call_id, name=call.name)
            # Stream the arguments in a few pieces, as real providers do.
            step = max(1, len(raw) // 3)
            for start in range(0, len(raw), step):
                await _pace(delay)
                output += 1
                yield ToolCallDelta(index=index, args_delta=raw[start : start + step])
        prompt = sum(len(m.text()) for m in request.messages) // 4
        if turn.usage == "reported":
            yield Usage(
                input_tokens=prompt,
                output_tokens=output,
                cached_tokens=min(turn.cached_tokens, prompt),
            )
        yield Finish(reason=turn.finish or ("tool_calls" if turn.tool_calls else "stop"))

    async def aclose(self) -> None:
        return None


async def _pace(delay: float) -> None:
    # Always yield to the loop, even at zero pacing, so a cancel lands between chunks.
    await asyncio.sleep(delay)
