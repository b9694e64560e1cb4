"""Which budgets apply to a caller, in three scopes a run must stay within together:

- per user: defaults from settings, overridden per role (`BUDGET_ROLES`). These are limits
  on each member's own spending. A caller with several overridden roles gets the most
  generous value of each budget (0 means no limit and beats any number), so granting a role
  never tightens a budget; the same rule as the request limits (`app.limits.policy`).
- per role as a group (`BUDGET_ROLE_TOTALS`): what everyone holding the role spends
  together. A caller is held to the group budget of every role they have.
- per API key (`BUDGET_API_KEYS`): `"*"` for every key, an entry per key id on top of
  it; only calls made with an API key count, and only against that key.
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


def _checked(what: str, values: Mapping[str, float]) -> Mapping[str, float]:
    unknown = set(values) - set(BUDGET_NAMES)
    if unknown:
        raise ValueError(f"unknown budget(s) for {what}: {sorted(unknown)}")
    if any(v < 0 for v in values.values()):
        raise ValueError(f"budgets for {what} must be >= 0")
    return values


class BudgetPolicy:
    def __init__(
        self,
        default: Budgets,
        per_role: Mapping[str, Mapping[str, float]],
        role_totals: Mapping[str, Mapping[str, float]] | None = None,
        api_keys: Mapping[str, Mapping[str, float]] | None = None,
    ) -> None:
        self._default = default
        none = asdict(Budgets())
        self._roles = {
            role: _budgets({**asdict(default), **_checked(f"role {role!r}", overrides)})
            for role, overrides in per_role.items()
        }
        self._groups = {
            role: _budgets({**none, **_checked(f"the role total {role!r}", values)})
            for role, values in (role_totals or {}).items()
        }
        keys = {key: _checked(f"API key {key!r}", v) for key, v in (api_keys or {}).items()}
        self._every_key = keys.pop("*", {})
        self._keys = {key: _budgets({**none, **self._every_key, **v}) for key, v in keys.items()}

    @property
    def enabled(self) -> bool:
        scoped = [*self._roles.values(), *self._groups.values(), *self._keys.values()]
        return self._default.any or bool(self._every_key) or any(b.any for b in scoped)

    def groups(self, caller: Caller) -> list[tuple[str, Budgets]]:
        """The group budgets of the caller's roles (each role's members' spending, summed)."""
        return [(role, self._groups[role]) for role in sorted(caller.roles) if role in self._groups]

    def for_api_key(self, api_key_id: str | None) -> Budgets:
        """The budgets of the key a caller authenticated with (none without a key)."""
        if api_key_id is None:
            return Budgets()
        return self._keys.get(api_key_id) or _budgets({**asdict(Budgets()), **self._every_key})

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
