"""Usage reports: what a caller (or, for admins, every user and role) spent."""

from __future__ import annotations

from datetime import date, datetime

from pydantic import BaseModel, Field


class UsageTotals(BaseModel):
    """Sums over the model calls of a group."""

    input_tokens: int = Field(description="Prompt tokens (cached ones included).")
    output_tokens: int = Field(description="Completion tokens.")
    cached_tokens: int = Field(description="Prompt tokens served from the provider's cache.")
    total_tokens: int = Field(description="Prompt plus completion tokens.")
    cost: float | None = Field(description="Cost at catalogue prices; null when unpriced.")
    calls: int = Field(description="Model calls.")
    estimated_calls: int = Field(
        description="Calls whose provider reported no usage (their tokens were counted here)."
    )


class UsageDay(UsageTotals):
    """One day's usage of one model."""

    day: date = Field(description="The UTC day.")
    model: str = Field(description="Catalogue id of the model.")


class BudgetOut(BaseModel):
    """One budget that applies to the caller, as it stands now."""

    budget: str = Field(description="`tokens_per_day`, `tokens_per_month`, `cost_per_day`...")
    limit: float = Field(description="The budget.")
    remaining: float = Field(description="What is left of it (0 or less: spent).")
    resets_at: datetime = Field(description="When its period ends (UTC).")
    scope: str = Field(
        default="user",
        description="Whose spending it caps: `user` (yours), `role:<name>` (everyone with the "
        "role, together) or `api_key` (what is spent with the key you called with).",
    )


class UsageReport(BaseModel):
    """The caller's own usage by day and model, with the totals and their budgets."""

    start: date = Field(description="First day reported (UTC).")
    end: date = Field(description="Last day reported (UTC), included.")
    days: list[UsageDay] = Field(description="Per day and model, oldest first.")
    totals: UsageTotals = Field(description="Over the whole range.")
    budgets: list[BudgetOut] = Field(description="The caller's budgets; empty when none.")


class UserUsage(UsageTotals):
    """One user's usage over the range."""

    user_id: str = Field(description="The user.")


class RoleUsage(UsageTotals):
    """The usage of a role's members over the range."""

    role: str = Field(description="The role (a user's calls count for each role they held).")


class AdminUsageReport(BaseModel):
    """Every user's and every role's usage over a range of days (admins)."""

    start: date = Field(description="First day reported (UTC).")
    end: date = Field(description="Last day reported (UTC), included.")
    users: list[UserUsage] = Field(description="Per user.")
    roles: list[RoleUsage] = Field(description="Per role held when the calls were made.")
