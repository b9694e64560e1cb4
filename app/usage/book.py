"""The usage book: what runs spend goes in, budgets and reports come out.

    allowance = await book.admit(caller)     # before a run: BudgetExceeded (429) when spent
    rows = await book.run_ended(caller, run_id, conversation_id, calls)  # one row a call:
    book.booked(rows)   # a stateless run's are recorded; a conversation run's come back to
                        # be written with its end, then counted (`write_later` if that fails)
    await book.days(user_id, start, end)     # GET /api/usage
    await book.users(start, end)             # the admin view, per user and per role

Budgets are sums over the stored records (`Tx.usage.spent`), so every instance sees what
the others recorded and a restart forgets nothing. A run checks its allowance while it
streams (`app.agent.metering`); runs that start together each see what was recorded
before them, so concurrent runs can overshoot by what they spend at once.

When the rows are written. A conversation run's go into the transaction that stores its
end (no transaction of their own). A stateless run's are written before its end is
visible when a budget applies to the caller (their next run, on any instance, is checked
against them); when none does, nobody's budget reads them and they are queued for the
batching writer (`app.usage.writer`, at most 100 ms later, flushed on shutdown). Usage
reports flush this instance's queue first; another instance's rows show up within that
100 ms.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from app.domain.errors import BudgetExceeded
from app.domain.identity import Caller
from app.domain.usage import Allowance, CallUsage
from app.store.database import Database
from app.store.repos.usage import UsageEntry, UsageTotal, roles_of, usage_entries
from app.usage.policy import BudgetPolicy
from app.usage.writer import UsageWriter

log = logging.getLogger("chat_bff.usage")


@dataclass(frozen=True, slots=True)
class Report:
    """Usage per user and per role over a range of days (the admin view)."""

    users: list[UsageTotal]
    roles: list[UsageTotal]


class NoUsage:
    """Where nothing is booked and no budget applies (a manager built without a book)."""

    async def admit(self, caller: Caller) -> Allowance | None:
        return None

    async def record(
        self, caller: Caller, run_id: str, conversation_id: str | None, calls: Sequence[CallUsage]
    ) -> None:
        return None

    def entries(
        self, caller: Caller, run_id: str, conversation_id: str | None, calls: Sequence[CallUsage]
    ) -> list[UsageEntry]:
        return []

    def booked(self, entries: Sequence[UsageEntry]) -> None:
        return None

    def write_later(self, entries: Sequence[UsageEntry]) -> None:
        return None

    async def run_ended(
        self, caller: Caller, run_id: str, conversation_id: str | None, calls: Sequence[CallUsage]
    ) -> list[UsageEntry]:
        return []


class UsageBook:
    def __init__(
        self,
        db: Database,
        policy: BudgetPolicy,
        *,
        observe: Callable[[CallUsage], None] | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        writer: UsageWriter | None = None,
    ) -> None:
        self._db = db
        self._policy = policy
        self._observe = observe
        self._clock = clock
        self._writer = writer or UsageWriter(db)

    def _budgeted(self, caller: Caller) -> bool:
        """Whether any budget reads this caller's usage (their own, a role's, their key's)."""
        policy = self._policy
        return (
            policy.for_caller(caller).any
            or policy.for_api_key(caller.api_key_id).any
            or any(budgets.any for _, budgets in policy.groups(caller))
        )

    async def allowance(self, caller: Caller) -> Allowance:
        """What the caller's budgets leave now, in every scope that applies: their own,
        each of their roles' group budget, their API key's (no limits when none does)."""
        own, key = self._policy.for_caller(caller), self._policy.for_api_key(caller.api_key_id)
        groups = [(role, budgets) for role, budgets in self._policy.groups(caller) if budgets.any]
        allowance, now = Allowance(), self._clock()
        if not (own.any or key.any or groups):
            return allowance
        async with self._db.read() as tx:
            if own.any:
                allowance += Allowance.of(own, await tx.usage.spent(caller.user_id, now), now)
            for role, budgets in groups:
                spent = await tx.usage.spent_by_role(role, now)
                allowance += Allowance.of(budgets, spent, now, scope=f"role:{role}")
            if key.any and caller.api_key_id is not None:
                spent = await tx.usage.spent_by_api_key(caller.api_key_id, now)
                allowance += Allowance.of(key, spent, now, scope="api_key")
        return allowance

    def today(self) -> datetime:
        return self._clock()

    async def admit(self, caller: Caller) -> Allowance | None:
        """What the caller's budgets leave for a run; raises BudgetExceeded when one is
        spent. None when no budget applies to the caller."""
        allowance = await self.allowance(caller)
        if not allowance.limits:
            return None
        now = self._clock()
        hit = allowance.exhausted()
        if hit is not None:
            raise BudgetExceeded(
                f"Spent: {hit.explain()}.",
                retry_after=max(1.0, (hit.resets_at - now).total_seconds()),
                **hit.detail(),
            )
        return allowance

    def entries(
        self, caller: Caller, run_id: str, conversation_id: str | None, calls: Sequence[CallUsage]
    ) -> list[UsageEntry]:
        """The rows of a run's model calls, for the caller to write (a conversation run
        writes them with its end); `booked` once they are stored."""
        return usage_entries(
            user_id=caller.user_id,
            roles=sorted(caller.roles),
            conversation_id=conversation_id,
            run_id=run_id,
            calls=calls,
            at=self._clock(),
            api_key_id=caller.api_key_id,
        )

    def booked(self, entries: Sequence[UsageEntry]) -> None:
        """Rows that are stored (or queued): counted in the metrics."""
        if self._observe is None:
            return
        for entry in entries:
            self._observe(
                CallUsage(
                    entry.model,
                    entry.input_tokens,
                    entry.output_tokens,
                    entry.cached_tokens,
                    entry.estimated,
                    entry.cost,
                )
            )

    def write_later(self, entries: Sequence[UsageEntry]) -> None:
        """Rows whose run could not store them (its end failed): the writer retries them."""
        self.booked(entries)
        self._writer.add(entries)

    async def run_ended(
        self, caller: Caller, run_id: str, conversation_id: str | None, calls: Sequence[CallUsage]
    ) -> list[UsageEntry]:
        """A stateless run's calls are recorded here; a conversation run's rows come back,
        for the transaction that stores its end (then `booked`, or `write_later`)."""
        if conversation_id is None:
            await self.record(caller, run_id, None, calls)
            return []
        return self.entries(caller, run_id, conversation_id, calls)

    async def record(
        self,
        caller: Caller,
        run_id: str,
        conversation_id: str | None,
        calls: Sequence[CallUsage],
    ) -> None:
        """Book a run's model calls: written now when a budget reads them, otherwise
        queued for the batching writer. A failing database is logged, never the run's
        failure (the rows are then queued and retried)."""
        if not calls:
            return
        entries = self.entries(caller, run_id, conversation_id, calls)
        self.booked(entries)
        if not self._budgeted(caller):
            self._writer.add(entries)
            return
        try:
            async with self._db.write() as tx:
                await tx.usage.insert(entries)
        except Exception:
            log.warning("could not record a run's usage", extra={"run_id": run_id}, exc_info=True)
            self._writer.add(entries)

    async def flush(self) -> None:
        """Write this instance's queued rows now (a report reads them next)."""
        await self._writer.flush()

    async def aclose(self, grace_seconds: float = 5.0) -> None:
        """Graceful shutdown: the queued rows are written (after the runs ended)."""
        await self._writer.aclose(grace_seconds)

    async def days(self, user_id: str, start: str, end: str) -> list[UsageTotal]:
        await self.flush()
        async with self._db.read() as tx:
            return await tx.usage.by_day_and_model(user_id, start, end)

    async def report(self, start: str, end: str) -> Report:
        await self.flush()
        async with self._db.read() as tx:
            rows = await tx.usage.by_user(start, end)
        users: dict[str, UsageTotal] = {}
        roles: dict[str, UsageTotal] = {}
        for row in rows:
            user_id, roles_text = row.key
            users[user_id] = _plus(users.get(user_id), row, (user_id,))
            for role in roles_of(roles_text):
                roles[role] = _plus(roles.get(role), row, (role,))
        return Report(
            users=[users[k] for k in sorted(users)], roles=[roles[k] for k in sorted(roles)]
        )


def _plus(total: UsageTotal | None, row: UsageTotal, key: tuple[str, ...]) -> UsageTotal:
    if total is None:
        return UsageTotal(
            key,
            row.input_tokens,
            row.output_tokens,
            row.cached_tokens,
            row.cost,
            row.calls,
            row.estimated_calls,
        )
    cost = None if total.cost is None and row.cost is None else (total.cost or 0) + (row.cost or 0)
    return UsageTotal(
        key,
        total.input_tokens + row.input_tokens,
        total.output_tokens + row.output_tokens,
        total.cached_tokens + row.cached_tokens,
        None if cost is None else round(cost, 9),
        total.calls + row.calls,
        total.estimated_calls + row.estimated_calls,
    )
