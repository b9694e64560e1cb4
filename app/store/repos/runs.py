"""Runs: one model turn (with its tool loop) and its final state."""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime
from typing import Any

from sqlalchemy import or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from app.domain.errors import NotFound
from app.domain.events import RunStatus
from app.store.records import RunRecord
from app.store.repos.turn_statements import INSERT_RUN, UPDATE_RUN
from app.store.tables.core import RunRow
from app.store.tables.types import utcnow

RUN_NOT_FOUND_MESSAGE = "Run not found."


def to_record(row: RunRow) -> RunRecord:
    return RunRecord(
        id=row.id,
        conversation_id=row.conversation_id,
        owner_id=row.owner_id,
        status=row.status,
        model=row.model,
        assistant_message_id=row.assistant_message_id,
        created_at=row.created_at,
        ended_at=row.ended_at,
        usage=row.usage,
        error=row.error,
        last_seq=row.last_seq,
        options=row.options,
    )


_LEASE = ("instance_id", "heartbeat_at", "cancel_requested_at")


def run_end_values(
    status: RunStatus,
    *,
    usage: dict[str, Any] | None,
    error: dict[str, Any] | None,
    last_seq: int | None,
) -> dict[str, Any]:
    """A run's final columns by name (`usage` and `last_seq` left as they are when None)."""
    values: dict[str, Any] = {"status": status, "ended_at": utcnow(), "error": error}
    if usage is not None:
        values["usage"] = usage
    if last_seq is not None:
        values["last_seq"] = last_seq
    return values


def new_run_row(
    owner_id: str,
    conversation_id: str | None,
    run_id: str,
    model: str,
    assistant_message_id: str | None,
    *,
    options: dict[str, Any] | None,
    instance_id: str | None,
) -> dict[str, Any]:
    """The `runs` row of a new run in status `running`, every column by name."""
    now = utcnow()
    return {
        "id": run_id,
        "conversation_id": conversation_id,
        "owner_id": owner_id,
        "status": "running",
        "model": model,
        "assistant_message_id": assistant_message_id,
        "created_at": now,
        "ended_at": None,
        "usage": None,
        "error": None,
        "last_seq": 0,
        "options": options,
        "instance_id": instance_id,
        "heartbeat_at": now,
        "cancel_requested_at": None,
    }


class RunRepo:
    """Runs. Wraps a session; never commits."""

    def __init__(self, session: AsyncSession) -> None:
        self._session = session

    async def create(
        self,
        owner_id: str,
        conversation_id: str | None,
        run_id: str,
        model: str,
        assistant_message_id: str | None,
        *,
        options: dict[str, Any] | None = None,
        instance_id: str | None = None,
    ) -> RunRecord:
        """A new run in status `running` (`conversation_id` None for stateless runs)."""
        row = new_run_row(
            owner_id,
            conversation_id,
            run_id,
            model,
            assistant_message_id,
            options=options,
            instance_id=instance_id,
        )
        await self._session.execute(INSERT_RUN, row)
        return RunRecord(**{k: v for k, v in row.items() if k not in _LEASE})

    async def insert(self, row: dict[str, Any]) -> None:
        """Write a `new_run_row`."""
        await self._session.execute(INSERT_RUN, row)

    async def get(
        self, owner_id: str, run_id: str, conversation_id: str | None = None
    ) -> RunRecord:
        """The caller's run (in that conversation, when given); anything else is NotFound."""
        query = select(RunRow).where(RunRow.id == run_id, RunRow.owner_id == owner_id)
        if conversation_id is not None:
            query = query.where(RunRow.conversation_id == conversation_id)
        row = await self._session.scalar(query)
        if row is None:
            raise NotFound(RUN_NOT_FOUND_MESSAGE)
        return to_record(row)

    async def finish(
        self,
        run_id: str,
        status: RunStatus,
        *,
        usage: dict[str, Any] | None = None,
        error: dict[str, Any] | None = None,
        last_seq: int | None = None,
    ) -> None:
        """Record the run's final state (`usage`/`error` as JSON, e.g. `model_dump()`)."""
        await self.end(run_id, run_end_values(status, usage=usage, error=error, last_seq=last_seq))

    async def end(self, run_id: str, values: dict[str, Any]) -> None:
        """Write a run's final columns (`run_end_values`); NotFound when the run is gone."""
        result = await self._session.execute(UPDATE_RUN, {"p_run": run_id, **values})
        if getattr(result, "rowcount", 1) == 0:
            raise NotFound(RUN_NOT_FOUND_MESSAGE)

    async def list_unfinished(
        self, *, stale_before: datetime | None = None, exclude_ids: Collection[str] = ()
    ) -> list[RunRecord]:
        """Runs still marked `running`; with `stale_before`, only those whose process has
        not renewed their lease since then (a dead process's), never those in
        `exclude_ids` (the runs the asking instance holds)."""
        query = select(RunRow).where(RunRow.status == "running")
        if stale_before is not None:
            query = query.where(
                or_(RunRow.heartbeat_at.is_(None), RunRow.heartbeat_at < stale_before)
            )
        if exclude_ids:
            query = query.where(RunRow.id.not_in(list(exclude_ids)))
        rows = await self._session.execute(query.order_by(RunRow.created_at))
        return [to_record(r) for r in rows.scalars()]

    async def renew(self, run_ids: list[str], instance_id: str) -> None:
        """Renew this process's lease on the runs it is running."""
        if not run_ids:
            return
        await self._session.execute(
            update(RunRow)
            .where(RunRow.id.in_(run_ids), RunRow.instance_id == instance_id)
            .values(heartbeat_at=utcnow())
            .execution_options(synchronize_session=False)
        )

    async def request_cancel(self, owner_id: str, run_id: str) -> None:
        """Keep a cancel of the caller's running run for the instance running it."""
        await self._session.execute(
            update(RunRow)
            .where(RunRow.id == run_id, RunRow.owner_id == owner_id, RunRow.status == "running")
            .values(cancel_requested_at=utcnow())
            .execution_options(synchronize_session=False)
        )

    async def cancel_requested(self, run_ids: Collection[str]) -> set[str]:
        """The runs among these that someone asked to cancel (on any instance)."""
        if not run_ids:
            return set()
        found = await self._session.scalars(
            select(RunRow.id).where(
                RunRow.id.in_(list(run_ids)),
                RunRow.status == "running",
                RunRow.cancel_requested_at.is_not(None),
            )
        )
        return set(found)

    async def latest_options(self, owner_id: str, conversation_id: str) -> dict[str, Any]:
        """The options of the conversation's newest run that had any (client tools)."""
        found = await self._session.scalar(
            select(RunRow.options)
            .where(
                RunRow.owner_id == owner_id,
                RunRow.conversation_id == conversation_id,
                RunRow.options.is_not(None),
            )
            .order_by(RunRow.created_at.desc())
            .limit(1)
        )
        return dict(found or {})
