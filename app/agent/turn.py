"""What one turn of the loop takes (`TurnOptions`) and how it ends (`TurnResult`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from app.domain.events import ContextInfo, UsageInfo
from app.domain.messages import Message
from app.domain.stream import GenerationOptions, ToolChoice, ToolSpec, no_options

TurnStatus = Literal["completed", "requires_action", "max_iterations", "failed", "budget_exceeded"]


@dataclass(frozen=True, slots=True)
class TurnOptions:
    max_iterations: int = 8
    client_tools: Sequence[ToolSpec] = ()
    tool_choice: ToolChoice | None = None
    max_output_tokens: int | None = None  # the client's ask; the model's cap bounds it
    temperature: float | None = None
    parallel_tool_calls: bool | None = None
    generation: GenerationOptions = field(default_factory=no_options)
    reserve_tokens: int = 4096


@dataclass
class TurnResult:
    status: TurnStatus
    message: Message
    usage: UsageInfo
    context: ContextInfo | None = None
    note: str | None = None
    error_code: str | None = None
    detail: dict[str, object] | None = None  # machine-readable, merged into the run's error
