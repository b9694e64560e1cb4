"""Questions tools asked the user mid-call (MCP elicitations): stored when asked, answered
once.

Like every repository it wraps one session and never commits. Another owner's question
is not found. Answering is a conditional UPDATE from `pending`, so of two answers racing
(two tabs, two instances) exactly one wins and the tool is called again once.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from app.domain.tooling import CallSite
from app.store.repos.call_sites import call_site_columns
from app.store.repos.rowcount import rowcount
from app.store.tables.tools import ElicitationRow
from app.store.tables.types import new_id, utcnow


@dataclass(frozen=True, slots=True)
class ElicitationRecord:
    id: str
    owner_id: str
    conversation_id: str
    run_id: str
    tool_call_id: str
    tool_name: str
    args: dict[str, Any]
    scope: dict[str, Any]
    model_id: str
    message: str
    requested_schema: dict[str, Any]
    state: dict[str, Any]
    status: str
    action: str | None
    answer_hash: str | None
    answered_at: datetime | None


def _record(row: ElicitationRow) -> ElicitationRecord:
    return ElicitationRecord(
        id=row.id,
        owner_id=row.owner_id,
        conversation_id=row.conversation_id,
        run_id=row.run_id,
        tool_call_id=row.tool_call_id,
        tool_name=row.tool_name,
        args=row.args,
        scope=row.scope,
        model_id=row.model_id,
        message=row.message,
        requested_schema=row.requested_schema,
        state=row.state,
        status=row.status,
        action=row.action,
        answer_hash=row.answer_hash,
        answered_at=row.answered_at,
    )


class ElicitationRepo:
    def __init__(self, session: AsyncSession) -> None:
        self._session = session

    async def ask(
        self,
        site: CallSite,
        *,
        tool_name: str,
        args: dict[str, Any],
        message: str,
        requested_schema: dict[str, Any],
        state: dict[str, Any],
    ) -> ElicitationRecord:
        assert site.conversation_id is not None
        row = ElicitationRow(
            id=new_id("elic"),
            **call_site_columns(site),
            tool_name=tool_name,
            args=args,
            message=message,
            requested_schema=requested_schema,
            state=state,
            status="pending",
            created_at=utcnow(),
        )
        self._session.add(row)
        await self._session.flush()
        return _record(row)

    async def latest(
        self, owner_id: str, conversation_id: str, tool_call_id: str
    ) -> ElicitationRecord | None:
        """The newest question of this call (a call may ask several, one after another)."""
        row = await self._session.scalar(
            select(ElicitationRow)
            .where(
                ElicitationRow.owner_id == owner_id,
                ElicitationRow.conversation_id == conversation_id,
                ElicitationRow.tool_call_id == tool_call_id,
            )
            .order_by(ElicitationRow.created_at.desc(), ElicitationRow.id.desc())
            .limit(1)
        )
        return _record(row) if row is not None else None

    async def get(self, owner_id: str, elicitation_id: str) -> ElicitationRecord | None:
        row = await self._session.scalar(
            select(ElicitationRow).where(
                ElicitationRow.id == elicitation_id, ElicitationRow.owner_id == owner_id
            )
        )
        return _record(row) if row is not None else None

    async def claim(
        self, owner_id: str, elicitation_id: str, *, action: str, answer_hash: str
    ) -> bool:
        """Mark a pending question answered; True for exactly one caller."""
        result = await self._session.execute(
            update(ElicitationRow)
            .where(
                ElicitationRow.id == elicitation_id,
                ElicitationRow.owner_id == owner_id,
                ElicitationRow.status == "pending",
            )
            .values(status="answered", action=action, answer_hash=answer_hash, answered_at=utcnow())
            .execution_options(synchronize_session=False)
        )
        return rowcount(result) == 1

    async def cancel_pending(self, owner_id: str, *, run_id: str, now: datetime) -> int:
        """Close the questions a stopped run left open: answering one later is refused."""
        result = await self._session.execute(
            update(ElicitationRow)
            .where(
                ElicitationRow.owner_id == owner_id,
                ElicitationRow.run_id == run_id,
                ElicitationRow.status == "pending",
            )
            .values(status="cancelled", answered_at=now)
            .execution_options(synchronize_session=False)
        )
        return rowcount(result)
