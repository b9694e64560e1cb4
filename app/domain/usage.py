"""Usage and budgets as values: what a model call used and cost, and what a caller has left.

    Price (per million tokens, from the catalogue)  ->  CallUsage.cost
    Budgets (per day / month, tokens / cost)         ->  Allowance at a run's start
    Allowance.crossed(run's usage so far)            ->  the limit the run went past, or None

Prompt tokens count cached ones too (OpenAI's `prompt_tokens` does; the Anthropic
translation adds cache reads in), so a price's `cached` applies to the cached share and
`input` to the rest.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

BudgetName = Literal["tokens_per_day", "tokens_per_month", "cost_per_day", "cost_per_month"]
BUDGET_NAMES: tuple[BudgetName, ...] = (
    "tokens_per_day",
    "tokens_per_month",
    "cost_per_day",
    "cost_per_month",
)


class Price(BaseModel):
    """What a model's tokens cost, per million tokens."""

    model_config = ConfigDict(extra="forbid")

    input: float = Field(ge=0, description="Per million prompt tokens not served from cache.")
    output: float = Field(ge=0, description="Per million completion tokens.")
    cached: float | None = Field(
        default=None, ge=0, description="Per million cached prompt tokens; `input` when absent."
    )

    def cost(self, input_tokens: int, output_tokens: int, cached_tokens: int = 0) -> float:
        cached = min(cached_tokens, input_tokens)
        cached_price = self.input if self.cached is None else self.cached
        total = (
            (input_tokens - cached) * self.input
            + cached * cached_price
            + output_tokens * self.output
        )
        return round(total / 1_000_000, 9)


@dataclass(frozen=True, slots=True)
class CallUsage:
    """One model call: its tokens, whether they were counted here, and their cost."""

    model: str
    input_tokens: int
    output_tokens: int
    cached_tokens: int = 0
    estimated: bool = False
    cost: float | None = None

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens


def priced(
    model: str,
    price: Price | None,
    *,
    input_tokens: int,
    output_tokens: int,
    cached_tokens: int = 0,
    estimated: bool = False,
) -> CallUsage:
    cost = price.cost(input_tokens, output_tokens, cached_tokens) if price else None
    return CallUsage(model, input_tokens, output_tokens, cached_tokens, estimated, cost)


@dataclass(frozen=True, slots=True)
class Budgets:
    """Limits on what one caller may spend; 0 means no limit."""

    tokens_per_day: int = 0
    tokens_per_month: int = 0
    cost_per_day: float = 0.0
    cost_per_month: float = 0.0

    @property
    def any(self) -> bool:
        return any(getattr(self, name) > 0 for name in BUDGET_NAMES)


def day_start(now: datetime) -> datetime:
    return now.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)


def month_start(now: datetime) -> datetime:
    return day_start(now).replace(day=1)


def resets_at(name: BudgetName, now: datetime) -> datetime:
    """When a budget's period ends (00:00 UTC the next day, or the first of next month)."""
    if name.endswith("_day"):
        return day_start(now) + timedelta(days=1)
    start = month_start(now)
    return (start + timedelta(days=32)).replace(day=1)


@dataclass(frozen=True, slots=True)
class Spent:
    """What a caller used in the current day and month."""

    tokens_day: int = 0
    tokens_month: int = 0
    cost_day: float = 0.0
    cost_month: float = 0.0

    def of(self, name: BudgetName) -> float:
        return {
            "tokens_per_day": self.tokens_day,
            "tokens_per_month": self.tokens_month,
            "cost_per_day": self.cost_day,
            "cost_per_month": self.cost_month,
        }[name]


@dataclass(frozen=True, slots=True)
class BudgetLimit:
    """One budget that applies to a run: what was left of it when the run started."""

    name: BudgetName
    limit: float
    remaining: float
    resets_at: datetime
    # Whose spending it caps: `user` (the caller's own), `role:<name>` (everyone holding
    # the role, together) or `api_key` (the key the caller authenticated with).
    scope: str = "user"

    @property
    def spent(self) -> bool:
        return self.remaining <= 0

    def explain(self) -> str:
        when = self.resets_at.isoformat().replace("+00:00", "Z")
        whose = {"user": "", "api_key": "API key's "}.get(self.scope, f"{self.scope} ")
        budget = self.name.replace("_", " ")
        return f"the {whose}{budget} budget ({self.limit:g}); it resets at {when}"

    def detail(self) -> dict[str, object]:
        """The machine-readable part of the error a client gets."""
        return {
            "budget": self.name,
            "limit": self.limit,
            "resets_at": self.resets_at.isoformat().replace("+00:00", "Z"),
            "scope": self.scope,
        }


@dataclass(frozen=True, slots=True)
class Allowance:
    """The budgets a run must stay within, measured when it started."""

    limits: tuple[BudgetLimit, ...] = ()

    @classmethod
    def of(cls, budgets: Budgets, spent: Spent, now: datetime, scope: str = "user") -> Allowance:
        limits = []
        for name in BUDGET_NAMES:
            limit = float(getattr(budgets, name))
            if limit > 0:
                left = limit - spent.of(name)
                limits.append(BudgetLimit(name, limit, left, resets_at(name, now), scope))
        return cls(tuple(limits))

    def __add__(self, other: Allowance) -> Allowance:
        """Both sets of budgets: a run must stay within every one."""
        return Allowance(self.limits + other.limits)

    def exhausted(self) -> BudgetLimit | None:
        """The first budget already spent (the one that resets last, so a retry then works)."""
        spent = [limit for limit in self.limits if limit.spent]
        return max(spent, key=lambda limit: limit.resets_at) if spent else None

    def crossed(self, tokens: int, cost: float | None) -> BudgetLimit | None:
        """The budget a run that used `tokens` (costing `cost`) went past, if any."""
        for limit in self.limits:
            used = tokens if limit.name.startswith("tokens") else (cost or 0.0)
            if used > limit.remaining:
                return limit
        return None
