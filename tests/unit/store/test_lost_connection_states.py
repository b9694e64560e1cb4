"""Which SQLSTATEs say the database connection is gone: a protocol violation (08P01) is
an ERROR Postgres answers on a connection that goes on (a bind message whose parameters do
not match its statement, a malformed message: the service's or the driver's bug), so it is
the 500 it was, not a 503 telling the client to retry the same bug."""

from __future__ import annotations

import asyncpg  # type: ignore[import-untyped]
import pytest
from sqlalchemy.dialects.postgresql.asyncpg import dialect as asyncpg_dialect
from sqlalchemy.exc import DBAPIError

from app.domain.errors import Unavailable
from app.store.lost_connection import lost, marking_connect_failures, reported_unavailable


def _as_sqlalchemy_raises(error: Exception) -> DBAPIError:
    """The error as it leaves a session: wrapped, the connection not invalidated."""
    wrapped = DBAPIError.instance(
        None,
        None,
        error,
        asyncpg.PostgresError,
        dialect=asyncpg_dialect(),  # type: ignore[no-untyped-call]
    )
    assert isinstance(wrapped, DBAPIError) and not wrapped.connection_invalidated
    return wrapped


def test_a_protocol_violation_on_a_live_connection_is_not_a_lost_one() -> None:
    violation = asyncpg.exceptions.ProtocolViolationError(
        'bind message supplies 1 parameters, but prepared statement "" requires 2'
    )
    assert violation.sqlstate == "08P01"
    assert not lost(violation)
    assert not lost(_as_sqlalchemy_raises(violation))
    with pytest.raises(DBAPIError), reported_unavailable():
        raise _as_sqlalchemy_raises(violation)


@pytest.mark.parametrize(
    "error",
    [
        asyncpg.exceptions.ConnectionDoesNotExistError("connection does not exist"),
        asyncpg.exceptions.ConnectionFailureError("connection failure"),
        asyncpg.exceptions.AdminShutdownError("terminating connection"),
        asyncpg.exceptions.CannotConnectNowError("the database system is starting up"),
    ],
    ids=lambda e: type(e).__name__,
)
def test_a_lost_or_refused_connection_is_still_unavailable(error: Exception) -> None:
    with pytest.raises(Unavailable), reported_unavailable():
        raise _as_sqlalchemy_raises(error)


class RefusingDialect:
    """A dialect whose driver finds nothing listening, as asyncpg raises it."""

    def connect(self, *_args: object, **_kwargs: object) -> object:
        raise ConnectionRefusedError(111, "Connect call failed ('127.0.0.1', 5432)")


def test_a_connection_that_could_not_be_opened_is_unavailable() -> None:
    with pytest.raises(Unavailable), reported_unavailable():
        marking_connect_failures(RefusingDialect(), None, [], {})


@pytest.mark.parametrize(
    "error",
    [FileNotFoundError(2, "No such file"), ConnectionRefusedError(111, "a service's own")],
    ids=lambda e: type(e).__name__,
)
def test_an_oserror_of_the_units_own_stays_what_it_was(error: OSError) -> None:
    with pytest.raises(type(error)), reported_unavailable():
        raise error
