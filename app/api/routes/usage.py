"""`GET /api/usage`: the caller's own usage by day and model, and where their budgets stand."""

from __future__ import annotations

from datetime import date
from typing import Annotated

from fastapi import Query

from app.api.deps import CallerDep, UsageDep
from app.api.routing import api_router
from app.api.schemas.usage import BudgetOut, UsageDay, UsageReport
from app.api.usage_report import IsoDay, bounds, day_range, summed, totals

router = api_router(prefix="/api", tags=["usage"])

FromQuery = Annotated[
    IsoDay | None, Query(alias="from", description="First UTC day; the month's first by default.")
]
ToQuery = Annotated[IsoDay | None, Query(alias="to", description="Last UTC day; today by default.")]


@router.get("/usage", response_model=UsageReport, summary="Your usage by day and model.")
async def read_usage(
    caller: CallerDep, usage: UsageDep, start: FromQuery = None, end: ToQuery = None
) -> UsageReport:
    first, last = day_range(start, end, usage.today())
    rows = await usage.days(caller.user_id, *bounds(first, last))
    allowance = await usage.allowance(caller)
    return UsageReport(
        start=first,
        end=last,
        days=[
            UsageDay(day=date.fromisoformat(r.key[0]), model=r.key[1], **totals(r)) for r in rows
        ],
        totals=summed(rows),
        budgets=[
            BudgetOut(
                budget=b.name,
                limit=b.limit,
                remaining=b.remaining,
                resets_at=b.resets_at,
                scope=b.scope,
            )
            for b in allowance.limits
        ],
    )
