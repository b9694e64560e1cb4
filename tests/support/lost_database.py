"""The database ending a connection under one statement, without a real server: the
repository method raises what SQLAlchemy raises then (a DBAPIError with
`connection_invalidated`), and the unit of work around it reports `Unavailable`
(`database_unavailable`) as it does for a restart or a failover, on SQLite and Postgres
alike."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy.exc import DBAPIError


def connection_ended() -> DBAPIError:
    return DBAPIError(
        "SELECT 1",
        None,
        ConnectionResetError("the server closed the connection"),
        connection_invalidated=True,
    )


def lose_connection_in(
    monkeypatch: pytest.MonkeyPatch,
    repo: type,
    method: str,
    *,
    spared: int = 0,
    times: int | None = None,
) -> None:
    """The calls of `repo.method` after the first `spared` meet a connection the database
    just ended: all of them, or the next `times` (the database is back after that)."""
    original = getattr(repo, method)
    calls = 0

    async def ended(*args: Any, **kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls <= spared or (times is not None and calls > spared + times):
            return await original(*args, **kwargs)
        raise connection_ended()

    monkeypatch.setattr(repo, method, ended)
