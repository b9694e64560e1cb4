"""Which limits apply to a caller: defaults from settings, overridden per role.

A caller with several overridden roles gets the most generous value of each limit (0 means
unlimited and beats any number), so granting a role never tightens a limit.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace

from app.domain.identity import Caller


@dataclass(frozen=True)
class Limits:
    requests_per_minute: int = 600
    concurrent_runs: int = 8
    tokens_per_day: int = 0
    open_streams: int = 0


def _more_generous(a: int, b: int) -> int:
    if a == 0 or b == 0:
        return 0
    return max(a, b)


class LimitPolicy:
    def __init__(self, default: Limits, per_role: Mapping[str, Mapping[str, int]]) -> None:
        names = {f.name for f in fields(Limits)}
        self._default = default
        self._roles: dict[str, Limits] = {}
        for role, overrides in per_role.items():
            unknown = set(overrides) - names
            if unknown:
                raise ValueError(f"unknown limit(s) for role {role!r}: {sorted(unknown)}")
            if any(v < 0 for v in overrides.values()):
                raise ValueError(f"limits for role {role!r} must be >= 0")
            self._roles[role] = replace(default, **dict(overrides))

    def for_caller(self, caller: Caller) -> Limits:
        matched = [self._roles[r] for r in sorted(caller.roles) if r in self._roles]
        if not matched:
            return self._default
        result = matched[0]
        for other in matched[1:]:
            result = Limits(
                *(
                    _more_generous(getattr(result, f.name), getattr(other, f.name))
                    for f in fields(Limits)
                )
            )
        return result
