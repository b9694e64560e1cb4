"""chat-bff with SQL statement counters, for the persistence benchmark.

`uvicorn bench.instrumented:create --factory` serves the unchanged `app.main.create_app()`
app, plus `GET /__bench/sql`: how many statements went to the database
(`before_cursor_execute` on every Engine, and the observer that a turn's statements sent
on the driver's own connection are told of, `app.store.observe`; an `executemany` counts
once, as one round trip), by leading SQL verb (a WITH that writes, by the first write
inside it) and by statement text (its first 90 characters), how many commits and how
many database connections were opened. The app has no such hook of its own, so the
benchmark brings it; counting costs one dict increment per statement.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Engine
from sqlalchemy.pool import Pool
from starlette.types import ASGIApp, Receive, Scope, Send

from app.store.observe import OBSERVE

COUNTS: Counter[str] = Counter()
_WRITE_IN_WITH = re.compile(r"\(\s*(INSERT|UPDATE|DELETE)\b")


def _on_execute(
    _conn: Any, _cursor: Any, statement: str, _params: Any, _context: Any, executemany: bool
) -> None:
    _count(statement, executemany)


def _on_driver(statement: str, executemany: bool) -> None:
    if statement == "COMMIT":
        COUNTS["commits"] += 1
    elif statement != "BEGIN":
        _count(statement, executemany)


def _observe(_dbapi_connection: Any, record: Any, _proxy: Any) -> None:
    record.info[OBSERVE] = _on_driver


def _count(statement: str, executemany: bool) -> None:
    verb = statement.lstrip().split(None, 1)[0].upper() if statement.strip() else "?"
    if verb == "WITH":  # a data-modifying WITH counts as its first write
        write = _WRITE_IN_WITH.search(statement)
        verb = write.group(1) if write else verb
    COUNTS["statements"] += 1
    COUNTS[f"verb:{verb}"] += 1
    COUNTS["sql:" + " ".join(statement.split())[:90]] += 1
    if executemany:
        COUNTS["executemany"] += 1


def _on_commit(_conn: Any) -> None:
    COUNTS["commits"] += 1


def _on_connect(_dbapi_connection: Any, _record: Any) -> None:
    COUNTS["connects"] += 1


def create() -> ASGIApp:
    from app.main import create_app

    event.listen(Engine, "before_cursor_execute", _on_execute)
    event.listen(Engine, "commit", _on_commit)
    event.listen(Pool, "checkout", _observe)
    event.listen(Pool, "connect", _on_connect)
    inner = create_app()

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] == "/__bench/sql":
            body = json.dumps(dict(COUNTS)).encode()
            headers = [
                (b"content-type", b"application/json"),
                (b"content-length", b"%d" % len(body)),
            ]
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            return
        await inner(scope, receive, send)

    return app
