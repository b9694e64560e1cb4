"""Usage queries: record a run's model calls, sum what a caller spent, report by day.

Like every repository it never commits: the caller owns the transaction. Reports take a
half-open range of UTC days `[start, end)` as `YYYY-MM-DD` text, the `day` column's form.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any, cast

from sqlalchemy import Select, Table, case, func, insert, select
from sqlalchemy.ext.asyncio import AsyncSession

from app.domain.usage import CallUsage, Spent, day_start, month_start
from app.store.tables.types import new_id, utcnow
from app.store.tables.usage import UsageRow

_TABLE = cast(Table, UsageRow.__table__)


@dataclass(frozen=True, slots=True)
class UsageEntry:
    """One usage row, made when the call is booked and written now or later (its id and
    time are the booking's, so a row written in a later batch still counts on its day)."""

    id: str
    user_id: str
    roles: str
    conversation_id: str | None
    run_id: str
    model: str
    input_tokens: int
    output_tokens: int
    cached_tokens: int
    estimated: bool
    cost: float | None
    day: str
    created_at: datetime
    api_key_id: str | None


def usage_entries(
    *,
    user_id: str,
    roles: Sequence[str],
    conversation_id: str | None,
    run_id: str,
    calls: Sequence[CallUsage],
    at: datetime | None = None,
    api_key_id: str | None = None,
) -> list[UsageEntry]:
    """The rows of a run's model calls, one a call."""
    now = at or utcnow()
    whose = roles_text(roles)
    day = f"{now:%Y-%m-%d}"
    return [
        UsageEntry(
            id=new_id("use"),
            user_id=user_id,
            roles=whose,
            conversation_id=conversation_id,
            run_id=run_id,
            model=call.model,
            input_tokens=call.input_tokens,
            output_tokens=call.output_tokens,
            cached_tokens=call.cached_tokens,
            estimated=call.estimated,
            cost=call.cost,
            day=day,
            created_at=now,
            api_key_id=api_key_id,
        )
        for call in calls
    ]


_FIELDS = tuple(f.name for f in fields(UsageEntry))


@dataclass(frozen=True, slots=True)
class UsageTotal:
    """Sums over a group of usage records (a day and model, a user, a role)."""

    key: tuple[str, ...]
    input_tokens: int
    output_tokens: int
    cached_tokens: int
    cost: float | None
    calls: int
    estimated_calls: int


def roles_text(roles: Sequence[str]) -> str:
    return "," + ",".join(sorted(roles)) + "," if roles else ""


def roles_of(text: str) -> list[str]:
    return [role for role in text.split(",") if role]


class UsageRepo:
    def __init__(self, session: AsyncSession) -> None:
        self._session = session

    async def insert(self, entries: Sequence[UsageEntry]) -> None:
        """Write booked rows in one INSERT (a Core statement: the ORM's unit of work cost
        as much again as the round trip)."""
        if entries:
            await self._session.execute(insert(_TABLE), usage_values(entries))

    async def spent(self, user_id: str, now: datetime | None = None) -> Spent:
        """What `user_id` used since 00:00 UTC today and since the first of the month."""
        return await self._spent(UsageRow.user_id == user_id, now)

    async def spent_by_role(self, role: str, now: datetime | None = None) -> Spent:
        """What everyone holding `role` (when they spent it) used, together."""
        return await self._spent(UsageRow.roles.contains(f",{role},", autoescape=True), now)

    async def spent_by_api_key(self, api_key_id: str, now: datetime | None = None) -> Spent:
        """What calls made with the API key `api_key_id` used."""
        return await self._spent(UsageRow.api_key_id == api_key_id, now)

    async def _spent(self, whose: Any, now: datetime | None) -> Spent:
        now = now or utcnow()
        day, month = day_start(now), month_start(now)
        tokens = UsageRow.input_tokens + UsageRow.output_tokens
        cost = func.coalesce(UsageRow.cost, 0.0)
        today = UsageRow.created_at >= day
        query = select(
            func.coalesce(func.sum(tokens), 0),
            func.coalesce(func.sum(cost), 0.0),
            func.coalesce(func.sum(_when(today, tokens)), 0),
            func.coalesce(func.sum(_when(today, cost)), 0.0),
        ).where(whose, UsageRow.created_at >= month)
        row = (await self._session.execute(query)).one()
        return Spent(
            tokens_day=int(row[2]),
            tokens_month=int(row[0]),
            cost_day=float(row[3]),
            cost_month=float(row[1]),
        )

    async def by_day_and_model(self, user_id: str, start: str, end: str) -> list[UsageTotal]:
        """One caller's usage per day and model, oldest day first."""
        query = _totals(UsageRow.day, UsageRow.model).where(
            UsageRow.user_id == user_id, UsageRow.day >= start, UsageRow.day < end
        )
        return await self._run(query.order_by(UsageRow.day, UsageRow.model))

    async def by_user(self, start: str, end: str) -> list[UsageTotal]:
        """Every caller's usage in the range, keyed by (user id, roles text)."""
        query = _totals(UsageRow.user_id, UsageRow.roles).where(
            UsageRow.day >= start, UsageRow.day < end
        )
        return await self._run(query.order_by(UsageRow.user_id, UsageRow.roles))

    async def _run(self, query: Select[Any]) -> list[UsageTotal]:
        rows = (await self._session.execute(query)).all()
        return [
            UsageTotal(
                key=(str(row[0]), str(row[1])),
                input_tokens=int(row[2]),
                output_tokens=int(row[3]),
                cached_tokens=int(row[4]),
                cost=None if row[5] is None else round(float(row[5]), 9),
                calls=int(row[6]),
                estimated_calls=int(row[7]),
            )
            for row in rows
        ]


def usage_values(entries: Sequence[UsageEntry]) -> list[dict[str, Any]]:
    """The `usage_records` rows of `entries`, by column."""
    return [{name: getattr(entry, name) for name in _FIELDS} for entry in entries]


def _when(condition: Any, value: Any) -> Any:
    return case((condition, value), else_=0)


def _totals(*keys: Any) -> Select[Any]:
    return select(
        *keys,
        func.sum(UsageRow.input_tokens),
        func.sum(UsageRow.output_tokens),
        func.sum(UsageRow.cached_tokens),
        func.sum(UsageRow.cost),
        func.count(),
        func.sum(_when(UsageRow.estimated, 1)),
    ).group_by(*keys)
