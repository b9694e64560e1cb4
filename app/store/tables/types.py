"""Column types and ids every table shares, on SQLite and Postgres from one model.

- JSON columns are `JSON`, `JSONB` on Postgres (`JSONType`).
- Timestamps are `UTCDateTime`: timezone-aware in Python on both databases (SQLite keeps
  no offset, so values are normalised to UTC on the way in and tagged UTC on the way out).
- Ids are strings with a prefix (`conv_<hex>`), made by `new_id`.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import JSON, DateTime
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator, TypeEngine

from app.domain.ids import uuid4_hex


class _JSONColumn(TypeDecorator[Any]):
    """`JSON`, and `JSONB` on Postgres: what `JSON().with_variant(JSONB(), "postgresql")`
    is, with Postgres's dialect imported only when a Postgres database asks for the type
    (on SQLite it was about 2.4 MB of a started worker's memory for nothing)."""

    impl = JSON
    cache_ok = True
    hashable = False  # as JSON's: dicts and lists
    should_evaluate_none = True  # as JSON's: None is JSON null, not SQL NULL

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        if dialect.name == "postgresql":
            from sqlalchemy.dialects.postgresql import JSONB

            return dialect.type_descriptor(JSONB())
        return dialect.type_descriptor(JSON())


JSONType = _JSONColumn()


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
