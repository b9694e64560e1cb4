"""Shaping usage records for the usage routes: the day range asked for, and the totals."""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta
from typing import Annotated, Any

from pydantic import BeforeValidator

from app.api.schemas.usage import UsageTotals
from app.domain.errors import InvalidRequest
from app.store.repos.usage import UsageTotal

MAX_DAYS = 366

_ISO_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")


def _iso_day_text(value: object) -> object:
    # pydantic reads a bare number as Unix time (`to=0` is 1970-01-01); the API's days
    # are ISO 8601 text, so a number is an error rather than a guess.
    if isinstance(value, str) and not _ISO_DAY.match(value):
        raise ValueError("must be an ISO 8601 date (YYYY-MM-DD)")
    return value


IsoDay = Annotated[date, BeforeValidator(_iso_day_text)]


def day_range(start: date | None, end: date | None, now: datetime) -> tuple[date, date]:
    """The days to report, both included: the current month up to today by default."""
    end = end or now.date()
    start = start or end.replace(day=1)
    if start > end:
        raise InvalidRequest("from must not be after to.", param="from")
    if (end - start).days >= MAX_DAYS:
        raise InvalidRequest(f"A report covers {MAX_DAYS} days at most.", param="from")
    return start, end


def bounds(start: date, end: date) -> tuple[str, str]:
    """The half-open range of `day` texts the repository takes."""
    return start.isoformat(), (end + timedelta(days=1)).isoformat()


def totals(row: UsageTotal) -> dict[str, Any]:
    return {
        "input_tokens": row.input_tokens,
        "output_tokens": row.output_tokens,
        "cached_tokens": row.cached_tokens,
        "total_tokens": row.input_tokens + row.output_tokens,
        "cost": row.cost,
        "calls": row.calls,
        "estimated_calls": row.estimated_calls,
    }


def summed(rows: list[UsageTotal]) -> UsageTotals:
    costs = [r.cost for r in rows if r.cost is not None]
    return UsageTotals(
        input_tokens=sum(r.input_tokens for r in rows),
        output_tokens=sum(r.output_tokens for r in rows),
        cached_tokens=sum(r.cached_tokens for r in rows),
        total_tokens=sum(r.input_tokens + r.output_tokens for r in rows),
        cost=round(sum(costs), 9) if costs else None,
        calls=sum(r.calls for r in rows),
        estimated_calls=sum(r.estimated_calls for r in rows),
    )
