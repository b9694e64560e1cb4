"""What a run's model calls use, and whether the run may go on spending.

Each model call is counted once, from the provider's usage when it reported any, else
counted here (the prompt's size, and the text streamed back, at four characters a token)
and marked estimated. A call cut short (cancel, timeout, an error mid-stream, a budget)
still counts what it streamed: the provider billed it.

With an `Allowance`, the meter watches the run while it streams: as soon as what the run
has used, plus the estimate of the call in flight, goes past a budget, `streamed` raises
`BudgetStop` and the loop ends the run with its partial answer kept.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from app.agent.context import CHARS_PER_TOKEN, estimate_tokens
from app.domain.events import UsageInfo
from app.domain.models import ModelInfo
from app.domain.stream import ModelRequest, ProviderEvent, TextDelta, ThinkingDelta, ToolCallDelta
from app.domain.usage import Allowance, BudgetLimit, CallUsage, priced
from app.translate.accumulator import ModelResponse


class BudgetStop(Exception):
    """The run went past one of its caller's budgets."""

    def __init__(self, limit: BudgetLimit) -> None:
        super().__init__(limit.name)
        self.limit = limit


def prompt_tokens(request: ModelRequest) -> int:
    """The prompt's size as we estimate it (messages and tool schemas)."""
    tools = sum(len(spec.model_dump_json()) for spec in request.tools) // CHARS_PER_TOKEN
    return sum(estimate_tokens(m) for m in request.messages) + tools


def _tokens(chars: int) -> int:
    return -(-chars // CHARS_PER_TOKEN)


@dataclass(slots=True)
class Meter:
    model: ModelInfo
    usage: UsageInfo
    allowance: Allowance | None = None
    fallbacks: Sequence[ModelInfo] = ()
    calls: list[CallUsage] = field(default_factory=list)
    _prompt: int = 0
    _chars: int = 0

    def begin(self, request: ModelRequest) -> None:
        self.usage.model_calls += 1
        self._prompt = prompt_tokens(request)
        self._chars = 0

    def streamed(self, event: ProviderEvent) -> None:
        """Count streamed text; raises BudgetStop when the run went past a budget."""
        if isinstance(event, TextDelta | ThinkingDelta):
            self._chars += len(event.text)
        elif isinstance(event, ToolCallDelta):
            self._chars += len(event.args_delta) + len(event.name or "")
        else:
            return
        if self.allowance is None or not self.allowance.limits:
            return
        output = _tokens(self._chars)
        tokens = self.usage.input_tokens + self.usage.output_tokens + self._prompt + output
        cost = self.usage.cost
        if self.model.price is not None:
            cost = (cost or 0.0) + self.model.price.cost(self._prompt, output)
        limit = self.allowance.crossed(tokens, cost)
        if limit is not None:
            raise BudgetStop(limit)

    def end(self, response: ModelResponse, *, partial: bool = False) -> None:
        """Count a finished call (or, with `partial`, one cut short that streamed)."""
        if partial and not (response.usage_reported or self._chars):
            return  # failed before anything came back: nothing was billed
        model = self._answering(response.model_id)
        estimate = _tokens(self._chars)
        if response.usage_reported and not (partial and response.output_tokens < estimate):
            call = priced(
                model.id,
                model.price,
                input_tokens=response.input_tokens,
                output_tokens=response.output_tokens,
                cached_tokens=response.cached_tokens,
            )
        else:
            call = priced(
                model.id,
                model.price,
                input_tokens=response.input_tokens or self._prompt,
                output_tokens=max(response.output_tokens, estimate),
                cached_tokens=response.cached_tokens,
                estimated=True,
            )
        self.calls.append(call)
        self.usage.add(call)
        self._chars = 0

    def restart(self, failed: ModelResponse, request: ModelRequest) -> None:
        """Failover after the first byte: the failed attempt is counted (it was billed),
        and the replacement is a model call of its own."""
        self.end(failed, partial=True)
        self.begin(request)

    def _answering(self, model_id: str | None) -> ModelInfo:
        """The model that answered: a fallback's calls are booked (and priced) as its own."""
        return next((m for m in self.fallbacks if m.id == model_id), self.model)

    def crossed(self) -> BudgetLimit | None:
        """The budget the run's counted usage went past, if any."""
        if self.allowance is None:
            return None
        return self.allowance.crossed(
            self.usage.input_tokens + self.usage.output_tokens, self.usage.cost
        )
