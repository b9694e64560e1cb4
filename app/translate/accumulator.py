"""Fold a stream of `ProviderEvent`s into an assistant message's parts.

Tool calls are keyed by the vendor's index (OpenAI's `tool_calls[].index` may start at 1
after text; Anthropic's content block index), so parallel calls whose pieces interleave
still land in the right part. The agent loop feeds it each event as it arrives (and
reports what each one started); the service makes no non-streaming model call, so there
is no second way to build parts that could drift from this one.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field, fields
from typing import assert_never

from app.domain.parts import (
    Part,
    TextData,
    TextPart,
    ThinkingData,
    ThinkingPart,
    ToolData,
    ToolPart,
)
from app.domain.stream import (
    Finish,
    FinishReason,
    ProviderEvent,
    ResponseMeta,
    StreamReset,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    Usage,
)
from app.translate.tool_args import parse_tool_args

# Deltas joined into one string as they arrive, this many at a time (see `Pieces`).
JOIN_EVERY = 16


class Pieces(list[str]):
    """A segment's deltas (text, thinking, a tool call's arguments), joined when read.

    Not one string grown per delta: `+=` on a string held by an object copies the whole
    string per delta, quadratic in a long answer. Not every delta kept either: a token's
    string is ~60 bytes of object around a few characters, so an answer held as its deltas
    cost ~15 times its text for as long as its stream was open (`bench.memory`, tracemalloc:
    4.2 KB a stream 70 tokens in, growing with every token). Every `JOIN_EVERY` deltas
    become one string as they arrive, joined with the strings before it while those are
    no longer: a segment holds a few strings of doubling length (each character copied
    about log2 of the segment's deltas times in all) and at most `JOIN_EVERY` deltas.
    """

    __slots__ = ("_loose",)

    def __init__(self) -> None:
        super().__init__()
        self._loose = 0  # deltas at the end not joined yet

    def add(self, piece: str) -> None:
        self.append(piece)
        self._loose += 1
        if self._loose == JOIN_EVERY:
            joined = "".join(self[-JOIN_EVERY:])
            del self[-JOIN_EVERY:]
            # Joined with the strings before it while they are no longer than it: a few
            # strings of doubling length, each character copied a few times in all.
            while self and len(self[-1]) <= len(joined):
                joined = self.pop() + joined
            self.append(joined)
            self._loose = 0


@dataclass
class _ToolCall:
    id: str
    name: str
    args_pieces: Pieces = field(default_factory=Pieces)

    @property
    def args_text(self) -> str:
        return "".join(self.args_pieces)


@dataclass
class ModelResponse:
    """What one model call produced, folded."""

    parts: list[Part]
    finish_reason: FinishReason | None = None
    # The provider's explanation of how it finished (a refusal's reason), when it gave one.
    finish_detail: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    usage_reported: bool = False  # whether the provider sent any usage at all
    response_id: str | None = None
    model: str | None = None
    model_id: str | None = None  # a fallback's catalogue id, when one answered

    def tool_parts(self) -> list[ToolPart]:
        return [p for p in self.parts if isinstance(p, ToolPart)]


@dataclass
class PartsBuilder:
    """Accumulates deltas; `feed` returns what changed so the agent can emit events."""

    _order: list[tuple[str, int]] = field(default_factory=list)  # (kind, key)
    # Each text or thinking segment is kept as its deltas (`Pieces`), joined in `build`.
    _texts: list[Pieces] = field(default_factory=list)
    _thinking: list[Pieces] = field(default_factory=list)
    _signatures: dict[int, str] = field(default_factory=dict)  # thinking key -> signature
    _calls: dict[int, _ToolCall] = field(default_factory=dict)  # key -> call
    _keys: dict[int, int] = field(default_factory=dict)  # vendor index -> current key
    finish_reason: FinishReason | None = None
    finish_detail: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    usage_reported: bool = False  # whether the provider sent any usage at all
    response_id: str | None = None
    model: str | None = None
    model_id: str | None = None

    def feed(self, event: ProviderEvent) -> _ToolCall | None:
        """Fold one event. Returns the tool call when this event started a new one."""
        if isinstance(event, TextDelta):
            self._text(event)
        elif isinstance(event, ThinkingDelta):
            self._thought(event)
        elif isinstance(event, ToolCallDelta):
            return self._call(event)
        elif isinstance(event, Usage):
            # Providers report cumulative usage per call; the last report wins per field.
            self.input_tokens = max(self.input_tokens, event.input_tokens)
            self.output_tokens = max(self.output_tokens, event.output_tokens)
            self.cached_tokens = max(self.cached_tokens, event.cached_tokens)
            self.usage_reported = self.usage_reported or bool(
                event.input_tokens or event.output_tokens
            )
        elif isinstance(event, Finish):
            self.finish_reason = event.reason
            self.finish_detail = event.detail or self.finish_detail
        elif isinstance(event, ResponseMeta):
            self.response_id = event.response_id or self.response_id
            self.model = event.model or self.model
            self.model_id = event.model_id or self.model_id
        elif isinstance(event, StreamReset):
            # Failover after the first byte: what came so far is void, the rest is new.
            fresh = PartsBuilder()
            for name in (f.name for f in fields(self)):
                setattr(self, name, getattr(fresh, name))
        else:
            assert_never(event)
        return None

    def _text(self, event: TextDelta) -> None:
        if not event.text:
            return
        if not self._order or self._order[-1][0] != "text":
            self._order.append(("text", len(self._texts)))
            self._texts.append(Pieces())
        self._texts[-1].add(event.text)

    def _thought(self, event: ThinkingDelta) -> None:
        if not self._order or self._order[-1][0] != "thinking":
            self._order.append(("thinking", len(self._thinking)))
            self._thinking.append(Pieces())
        self._thinking[-1].add(event.text)
        if event.signature:
            # Anthropic verifies thinking by this signature when it travels back.
            self._signatures[len(self._thinking) - 1] = event.signature

    def _call(self, event: ToolCallDelta) -> _ToolCall | None:
        call = self.call_for(event.index)
        # Some OpenAI-compatible servers send every complete call with the same index and
        # a new id: a new id at a known index is a new call, not more arguments.
        if call is None or (event.id is not None and event.id != call.id):
            call = _ToolCall(id=event.id or f"call_{uuid.uuid4().hex[:24]}", name=event.name or "")
            key = len(self._calls)
            self._calls[key] = call
            self._keys[event.index] = key
            self._order.append(("tool", key))
            call.args_pieces.add(event.args_delta)
            return call
        if event.name and not call.name:
            call.name = event.name
        call.args_pieces.add(event.args_delta)
        return None

    def call_for(self, index: int) -> _ToolCall | None:
        """The call the vendor's `index` currently points at."""
        key = self._keys.get(index)
        return None if key is None else self._calls[key]

    def build(self) -> ModelResponse:
        parts: list[Part] = []
        for kind, key in self._order:
            if kind == "text":
                parts.append(TextPart(data=TextData(text="".join(self._texts[key]))))
            elif kind == "thinking":
                parts.append(
                    ThinkingPart(
                        data=ThinkingData(
                            content="".join(self._thinking[key]),
                            status="thought",
                            signature=self._signatures.get(key),
                        )
                    )
                )
            else:
                call = self._calls[key]
                args, problem = parse_tool_args(call.name, call.args_text)
                parts.append(
                    ToolPart(
                        id=call.id,
                        data=ToolData(
                            toolName=call.name,
                            toolCallId=call.id,
                            args=args,
                            status="error" if problem else "loading",
                            bodyContent=problem,
                            result={"error": problem} if problem else None,
                        ),
                    )
                )
        finish = self.finish_reason
        if finish is None:
            finish = "tool_calls" if self._calls else "stop"
        return ModelResponse(
            parts=parts,
            finish_reason=finish,
            finish_detail=self.finish_detail,
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            cached_tokens=self.cached_tokens,
            usage_reported=self.usage_reported,
            response_id=self.response_id,
            model=self.model,
            model_id=self.model_id,
        )
