"""A Core statement compiled once for a dialect, to run on the driver's own connection.

SQLAlchemy's execution of a statement (the connection's bookkeeping, its events, the
result object, a greenlet switch per driver call) costs a few hundred microseconds on
SQLite, many times what SQLite takes to run it. What it does to the values is kept
here: each positional parameter goes through its type's bind processor (JSON, timestamps
in UTC) and each column read back through its result processor, so the driver gets and
gives what SQLAlchemy's execution would have. The SQL is SQLAlchemy's compiled string.
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sqlalchemy.engine import Dialect
from sqlalchemy.sql import ClauseElement
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.types import TypeEngine

Process = Callable[[Any], Any] | None


class Prepared:
    """`statement` as `sql` with positional parameters made by `params` (named values in,
    the statement's literal values filled in) and rows read by `row`. `keys` names an
    INSERT's columns, as the values it is executed with would."""

    __slots__ = ("_binds", "_columns", "_named", "sql")

    def __init__(
        self, statement: ClauseElement, dialect: Dialect, keys: Sequence[str] | None = None
    ) -> None:
        compiled = statement.compile(dialect=dialect, column_keys=list(keys or ()) or None)
        assert isinstance(compiled, SQLCompiler)
        assert compiled.positiontup is not None, "a dialect with positional parameters"
        self.sql = compiled.string
        given = compiled.construct_params(_check=False)
        self._binds: list[tuple[str, Any, Process]] = [
            (name, given.get(name), _bind(compiled.binds[name].type, dialect))
            for name in compiled.positiontup
        ]
        read: Any = statement  # a SELECT's columns, or what a DML statement returns
        selected = getattr(read, "selected_columns", None)
        columns = list(selected if selected is not None else read.exported_columns)
        self._columns: list[Process] = [_result(c.type, dialect) for c in columns]
        names = [getattr(c, "name", None) or f"_{i}" for i, c in enumerate(columns)]
        self._named = namedtuple("Row", names, rename=True)  # type: ignore[misc]

    def params(self, values: Mapping[str, Any]) -> tuple[Any, ...]:
        out = []
        for name, default, process in self._binds:
            value = values.get(name, default)
            out.append(value if process is None else process(value))
        return tuple(out)

    def row(self, raw: Sequence[Any]) -> tuple[Any, ...]:
        return tuple(
            value if process is None else process(value)
            for value, process in zip(raw, self._columns, strict=False)
        )

    def named(self, raw: Sequence[Any]) -> Any:
        """`row`, its columns also by name (a SELECT's)."""
        return self._named(*self.row(raw))


def _bind(type_: TypeEngine[Any], dialect: Dialect) -> Process:
    return type_.dialect_impl(dialect).bind_processor(dialect)


def _result(type_: TypeEngine[Any], dialect: Dialect) -> Process:
    return type_.dialect_impl(dialect).result_processor(dialect, None)
