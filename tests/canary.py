"""Canary infrastructure: plant secret values, drive the API, then look everywhere for them.

    with capture_logs() as logs:                 # every record, DEBUG and up
        async with make_api(settings) as api:
            seen = Seen()
            seen.response(await api.post(...))   # status line, headers and body (SSE too)
            seen.add("metrics", (await api.get("/metrics")).text)
            seen.add("database", await dump_database(api.services.db.sessions))
    seen.add("logs", logs.text())
    assert seen.find(CANARIES) == []

`find` checks the full value and a distinctive inner slice of it, so a partly masked echo
(`sk-proj-****CANARY****`) still counts as a leak.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import httpx
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.examples.graph.tables import GraphBase
from app.observability.logging import JsonFormatter, extra_fields
from app.store.migrate import target_metadata


def canary(prefix: str) -> str:
    """A secret-shaped value that appears nowhere else: prefix + CANARY + random hex."""
    return f"{prefix}CANARY{secrets.token_hex(16)}"


class LogCapture(logging.Handler):
    """Keeps every record twice: as our JSON line, and as raw text (message, args, extras,
    exception) before any formatter or filter could hide something."""

    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.records: list[logging.LogRecord] = []
        self.raw: list[str] = []
        self.lines: list[str] = []
        self._json = JsonFormatter()

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)
        parts = [str(record.msg), repr(record.args), repr(extra_fields(record))]
        if record.exc_info:
            parts.append(logging.Formatter().formatException(record.exc_info))
        if record.exc_text:
            parts.append(record.exc_text)
        self.raw.append(" ".join(parts))
        self.lines.append(self._json.format(record))

    def text(self) -> str:
        return "\n".join(self.raw + self.lines)


@contextmanager
def capture_logs() -> Iterator[LogCapture]:
    root = logging.getLogger()
    handler = LogCapture()
    previous = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        yield handler
    finally:
        root.removeHandler(handler)
        root.setLevel(previous)


async def dump_database(sessions: async_sessionmaker[AsyncSession]) -> str:
    """Every row of every table the service declares (the example graph's too), as text."""
    out: list[str] = []
    tables = [*target_metadata().sorted_tables, *GraphBase.metadata.sorted_tables]
    async with sessions() as session:
        for table in tables:
            for row in (await session.execute(select(table))).all():
                out.append(f"{table.name}: {tuple(row)!r}")
    return "\n".join(out)


@dataclass
class Seen:
    """Everything observed, labelled by where it came from."""

    places: dict[str, list[str]] = field(default_factory=dict)

    def add(self, where: str, text: str) -> None:
        self.places.setdefault(where, []).append(text)

    def response(self, response: httpx.Response) -> None:
        headers = "\n".join(f"{k}: {v}" for k, v in response.headers.items())
        self.add(
            f"response {response.request.method} {response.request.url.path}",
            f"{response.status_code}\n{headers}\n\n{response.text}",
        )

    def find(self, values: Iterable[str]) -> list[str]:
        """Where any value (or its distinctive middle) appears; empty when nowhere."""
        hits: list[str] = []
        for value in values:
            needles = {value, value[len(value) // 4 : -len(value) // 4]}
            for where, texts in self.places.items():
                if any(n in t for t in texts for n in needles if len(n) >= 12):
                    hits.append(f"{value[:6]}... in {where}")
        return hits
