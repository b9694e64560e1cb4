"""Background jobs (see `app.store.tables.jobs`): created once per call, finished once.

Like every repository it wraps one session and never commits. A missing id and another
owner's id raise the same `NotFound`. Finishing is a conditional UPDATE on
`status = 'running'` (Postgres re-checks it under the row lock, SQLite has one writer at
a time), so a cancel and the job's own end cannot both be recorded; a take-over after a
restart is conditional on the lease having lapsed, so two instances never both resume it.
A start counts the running jobs under `lock_starts`, so the caps hold across instances.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import func, select, text, update
from sqlalchemy.ext.asyncio import AsyncSession

from app.domain.errors import NotFound
from app.domain.tooling import CallSite
from app.store.repos.call_sites import call_site_columns
from app.store.repos.rowcount import rowcount
from app.store.tables.jobs import BackgroundJobRow
from app.store.tables.types import new_id

RUNNING = "running"
# pg_advisory_xact_lock key of job starts: "chatbff" + "\x0b" as a big-endian integer.
STARTS_LOCK_KEY = int.from_bytes(b"chatbff\x0b", "big")


@dataclass(frozen=True, slots=True)
class JobRecord:
    id: str
    owner_id: str
    roles: frozenset[str]
    conversation_id: str | None
    run_id: str
    tool_call_id: str
    tool_name: str
    args: dict[str, Any]
    scope: dict[str, Any]
    model_id: str
    status: str
    result: Any | None
    error: str | None
    instance_id: str
    attempts: int
    created_at: datetime
    heartbeat_at: datetime
    finished_at: datetime | None
    delivered_at: datetime | None


def _record(row: BackgroundJobRow) -> JobRecord:
    return JobRecord(
        id=row.id,
        owner_id=row.owner_id,
        roles=frozenset(r for r in row.roles.split(",") if r),
        conversation_id=row.conversation_id,
        run_id=row.run_id,
        tool_call_id=row.tool_call_id,
        tool_name=row.tool_name,
        args=row.args,
        scope=row.scope,
        model_id=row.model_id,
        status=row.status,
        result=row.result,
        error=row.error,
        instance_id=row.instance_id,
        attempts=row.attempts,
        created_at=row.created_at,
        heartbeat_at=row.heartbeat_at,
        finished_at=row.finished_at,
        delivered_at=row.delivered_at,
    )


class JobRepo:
    """Background jobs. Wraps a session; never commits."""

    def __init__(self, session: AsyncSession) -> None:
        self._session = session

    async def lock_starts(self) -> None:
        """Serialise job starts over every instance until the transaction ends, so the
        count of running jobs a start is admitted on cannot change before it is inserted.

        Postgres: a transaction-level advisory lock (starts are rare; a row lock would need
        a row). SQLite: a write first, which takes the database's one write lock.
        """
        if self._session.get_bind().dialect.name == "postgresql":
            await self._session.execute(
                text("SELECT pg_advisory_xact_lock(:key)"), {"key": STARTS_LOCK_KEY}
            )
            return
        await self._session.execute(
            update(BackgroundJobRow)
            .where(BackgroundJobRow.id == "")
            .values(status=BackgroundJobRow.status)
        )

    async def create(
        self,
        site: CallSite,
        tool_name: str,
        args: dict[str, Any],
        *,
        instance_id: str,
        now: datetime,
    ) -> JobRecord:
        roles = ",".join(sorted(site.caller.roles))
        row = BackgroundJobRow(
            id=new_id("job"),
            **call_site_columns(site),
            roles=f",{roles}," if roles else "",
            tool_name=tool_name,
            args=args,
            status=RUNNING,
            instance_id=instance_id,
            attempts=1,
            created_at=now,
            heartbeat_at=now,
        )
        self._session.add(row)
        await self._session.flush()
        return _record(row)

    async def for_call(self, run_id: str, tool_call_id: str) -> JobRecord | None:
        """The job of one tool call, if it has one (a replayed call finds the same job)."""
        row = await self._session.scalar(
            select(BackgroundJobRow).where(
                BackgroundJobRow.run_id == run_id, BackgroundJobRow.tool_call_id == tool_call_id
            )
        )
        return _record(row) if row is not None else None

    async def count_running(self, owner_id: str | None = None) -> int:
        query = select(func.count()).where(BackgroundJobRow.status == RUNNING)
        if owner_id is not None:
            query = query.where(BackgroundJobRow.owner_id == owner_id)
        return int(await self._session.scalar(query) or 0)

    async def get(self, owner_id: str, job_id: str) -> JobRecord:
        row = await self._session.get(BackgroundJobRow, job_id)
        if row is None or row.owner_id != owner_id:
            raise NotFound("Background job not found.", code="job_not_found")
        return _record(row)

    async def load(self, job_id: str) -> JobRecord | None:
        """A job by id alone, for the service that runs it (ownership checked at start)."""
        row = await self._session.get(BackgroundJobRow, job_id)
        return _record(row) if row is not None else None

    async def of_owner(self, owner_id: str, *, limit: int) -> list[JobRecord]:
        rows = await self._session.scalars(
            select(BackgroundJobRow)
            .where(BackgroundJobRow.owner_id == owner_id)
            .order_by(BackgroundJobRow.created_at.desc(), BackgroundJobRow.id.desc())
            .limit(limit)
        )
        return [_record(r) for r in rows]

    async def running_of_run(self, owner_id: str, run_id: str) -> list[JobRecord]:
        rows = await self._session.scalars(
            select(BackgroundJobRow).where(
                BackgroundJobRow.owner_id == owner_id,
                BackgroundJobRow.run_id == run_id,
                BackgroundJobRow.status == RUNNING,
            )
        )
        return [_record(r) for r in rows]

    async def finish(
        self, job_id: str, status: str, *, result: Any, error: str | None, now: datetime
    ) -> bool:
        """Record the job's end; False when it had already ended (cancelled meanwhile)."""
        done = await self._session.execute(
            update(BackgroundJobRow)
            .where(BackgroundJobRow.id == job_id, BackgroundJobRow.status == RUNNING)
            .values(status=status, result=result, error=error, finished_at=now)
        )
        return rowcount(done) == 1

    async def delivered(self, job_id: str, now: datetime) -> None:
        await self._session.execute(
            update(BackgroundJobRow).where(BackgroundJobRow.id == job_id).values(delivered_at=now)
        )

    async def renew(self, job_ids: Collection[str], instance_id: str, now: datetime) -> set[str]:
        """Extend this instance's leases; returns the ids among them no longer running
        (cancelled through another instance): their tasks are to be stopped."""
        if not job_ids:
            return set()
        await self._session.execute(
            update(BackgroundJobRow)
            .where(
                BackgroundJobRow.id.in_(list(job_ids)),
                BackgroundJobRow.instance_id == instance_id,
                BackgroundJobRow.status == RUNNING,
            )
            .values(heartbeat_at=now)
        )
        still = await self._session.scalars(
            select(BackgroundJobRow.id).where(
                BackgroundJobRow.id.in_(list(job_ids)), BackgroundJobRow.status == RUNNING
            )
        )
        return set(job_ids) - set(still)

    async def stale(self, *, before: datetime, exclude: Collection[str]) -> list[JobRecord]:
        """Running jobs whose lease lapsed: their process died."""
        query = select(BackgroundJobRow).where(
            BackgroundJobRow.status == RUNNING, BackgroundJobRow.heartbeat_at < before
        )
        if exclude:
            query = query.where(BackgroundJobRow.id.not_in(list(exclude)))
        return [_record(r) for r in await self._session.scalars(query)]

    async def undelivered(self, *, finished_before: datetime) -> list[JobRecord]:
        """Ended jobs whose result never reached their conversation (a process died in
        between, or the conversation stayed busy)."""
        rows = await self._session.scalars(
            select(BackgroundJobRow).where(
                BackgroundJobRow.status != RUNNING,
                BackgroundJobRow.delivered_at.is_(None),
                BackgroundJobRow.finished_at < finished_before,
            )
        )
        return [_record(r) for r in rows]

    async def take_over(
        self, job_id: str, instance_id: str, *, before: datetime, now: datetime
    ) -> bool:
        """Claim a dead process's running job to run it again (a resumable tool)."""
        done = await self._session.execute(
            update(BackgroundJobRow)
            .where(
                BackgroundJobRow.id == job_id,
                BackgroundJobRow.status == RUNNING,
                BackgroundJobRow.heartbeat_at < before,
            )
            .values(
                instance_id=instance_id,
                heartbeat_at=now,
                attempts=BackgroundJobRow.attempts + 1,
            )
        )
        return rowcount(done) == 1
