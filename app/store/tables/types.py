"""Column types and ids every table shares, on SQLite and Postgres from one model.

- JSON columns are `JSON` with a `JSONB` variant on Postgres.
- Timestamps are `UTCDateTime`: timezone-aware in Python on both databases (SQLite keeps
  no offset, so values are normalised to UTC on the way in and tagged UTC on the way out).
- Ids are strings with a prefix (`conv_<hex>`), made by `new_id`.
"""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import JSON, DateTime
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator

from app.domain.ids import uuid4_hex

JSONType = JSON().with_variant(JSONB(), "postgresql")


def new_id(prefix: str) -> str:
    return f"{prefix}_{uuid4_hex()}"


def utcnow() -> datetime:
    return datetime.now(UTC)


class UTCDateTime(TypeDecorator[datetime]):
    """A timezone-aware timestamp on every backend; naive values are refused."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime: pass a timezone-aware value")
        return value.astimezone(UTC)

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)
