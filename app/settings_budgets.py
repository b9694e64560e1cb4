"""The budget settings, a part of `Settings` (which inherits them) kept in a module of its
own so each stays one readable page.

Budgets cap what a caller spends per UTC day and month, in tokens (in + out) and in cost
(the catalogue's `price`); 0 means no budget. `BUDGET_ROLES` overrides them per role, the
most generous value winning for a caller with several roles. `BUDGET_ROLE_TOTALS` caps
what a role's members spend together, `BUDGET_API_KEYS` what is spent with an API key.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, NoDecode

from app.config_errors import json_setting
from app.domain.usage import Budgets
from app.usage.policy import BudgetPolicy


class BudgetSettings(BaseSettings):
    budget_tokens_per_day: int = Field(
        default=0, ge=0, description="Tokens (in + out) per caller per UTC day; 0: no budget."
    )
    budget_tokens_per_month: int = Field(
        default=0, ge=0, description="Tokens (in + out) per caller per UTC month; 0: no budget."
    )
    budget_cost_per_day: float = Field(
        default=0.0, ge=0, description="Cost per caller per UTC day (catalogue prices); 0: none."
    )
    budget_cost_per_month: float = Field(
        default=0.0, ge=0, description="Cost per caller per UTC month; 0: no budget."
    )
    budget_roles: Annotated[dict[str, dict[str, float]], NoDecode] = Field(
        default_factory=dict,
        description='Per-role budgets, e.g. `{"staff": {"cost_per_month": 100}}`.',
    )

    budget_role_totals: Annotated[dict[str, dict[str, float]], NoDecode] = Field(
        default_factory=dict,
        description="Budgets of a role's members together, e.g. "
        '`{"interns": {"cost_per_month": 200}}`.',
    )
    budget_api_keys: Annotated[dict[str, dict[str, float]], NoDecode] = Field(
        default_factory=dict,
        description='Budgets per API key: `"*"` for every key, a key id for one, e.g. '
        '`{"*": {"tokens_per_day": 200000}, "key_abc": {"cost_per_month": 50}}`.',
    )

    usage_write_interval_seconds: float = Field(
        default=0.1,
        gt=0,
        le=60,
        description="How long a usage row no budget reads may wait to be written with "
        "others in one INSERT (written at once when a budget applies; flushed on shutdown).",
    )

    @field_validator("budget_roles", "budget_role_totals", "budget_api_keys", mode="before")
    @classmethod
    def _parse_budget_json(cls, value: Any) -> Any:
        return json_setting(value) if isinstance(value, str) else value

    @field_validator("budget_roles", "budget_role_totals", "budget_api_keys")
    @classmethod
    def _known_budgets(cls, value: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
        BudgetPolicy(Budgets(), value)  # raises ValueError naming the entry and budget
        return value

    def budget_policy(self) -> BudgetPolicy:
        default = Budgets(
            tokens_per_day=self.budget_tokens_per_day,
            tokens_per_month=self.budget_tokens_per_month,
            cost_per_day=self.budget_cost_per_day,
            cost_per_month=self.budget_cost_per_month,
        )
        return BudgetPolicy(
            default, self.budget_roles, self.budget_role_totals, self.budget_api_keys
        )
