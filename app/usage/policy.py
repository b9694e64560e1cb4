"""Which budgets apply to a caller: defaults from settings, overridden per role.

A caller with several overridden roles gets the most generous value of each budget (0
means no limit and beats any number), so granting a role never tightens a budget; the
same rule as the request limits (`app.limits.policy`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict

from app.domain.identity import Caller
from app.domain.usage import BUDGET_NAMES, Budgets


def _more_generous(a: float, b: float) -> float:
    return 0 if a == 0 or b == 0 else max(a, b)


def _budgets(values: Mapping[str, float]) -> Budgets:
    return Budgets(
        tokens_per_day=int(values["tokens_per_day"]),
        tokens_per_month=int(values["tokens_per_month"]),
        cost_per_day=float(values["cost_per_day"]),
        cost_per_month=float(values["cost_per_month"]),
    )


class BudgetPolicy:
    def __init__(self, default: Budgets, per_role: Mapping[str, Mapping[str, float]]) -> None:
        self._default = default
        self._roles: dict[str, Budgets] = {}
        for role, overrides in per_role.items():
            unknown = set(overrides) - set(BUDGET_NAMES)
            if unknown:
                raise ValueError(f"unknown budget(s) for role {role!r}: {sorted(unknown)}")
            if any(v < 0 for v in overrides.values()):
                raise ValueError(f"budgets for role {role!r} must be >= 0")
            self._roles[role] = _budgets({**asdict(default), **overrides})

    @property
    def enabled(self) -> bool:
        return self._default.any or any(b.any for b in self._roles.values())

    def for_caller(self, caller: Caller) -> Budgets:
        matched = [self._roles[r] for r in sorted(caller.roles) if r in self._roles]
        if not matched:
            return self._default
        result = matched[0]
        for other in matched[1:]:
            result = _budgets(
                {
                    name: _more_generous(getattr(result, name), getattr(other, name))
                    for name in BUDGET_NAMES
                }
            )
        return result
