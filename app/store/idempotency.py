"""Idempotency keys: a create request sent again under the same key answers the first
one's outcome instead of creating the thing twice.

The outcome is written in the transaction that creates the thing, so a COMMIT whose
answer was lost (a 503 `database_unavailable`) kept both or neither: the retry finds the
outcome, or finds nothing and does the work once.

    the caller's key, unexpired, is ...      the request
    not stored                               does its work and keeps its outcome
    stored, same fingerprint                 answers the stored outcome, does nothing
    stored, another fingerprint              422 `idempotency_key_reused`
    stored by a concurrent request meanwhile its transaction rolls back (`KeyTaken`); it
                                             answers the stored outcome

A concurrent repeat waits for the first request's transaction (a row lock, a unique key)
and then answers its outcome: the whole outcome is decided inside that one transaction,
so there is no window in which a key is taken but its outcome unknown. Should the
outcome still be unreadable after a collision, the answer is 409
`idempotency_key_in_flight` with Retry-After.

An outcome about a conversation (one it created, or a turn in it) names it, and a purge
of the conversation deletes it in the same transaction: a keyed retry after the purge
does its work again (or finds no conversation), never answers what was purged.

Keys are the caller's own (the primary key starts with the owner) and live for the
`ttl` the request came with; a lapsed key is free again. Each key kept deletes the
caller's lapsed keys and up to `SWEEP` lapsed keys of anyone: an outcome holds what the
request created (a title, an item's text), so a caller who never comes back must not
leave it for ever. The sweep skips rows another transaction holds (Postgres), so callers
never wait on each other's lapsed keys.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import delete, select, tuple_
from sqlalchemy.ext.asyncio import AsyncSession

from app.domain.errors import InvalidRequest, RetryLater
from app.store.dialect_insert import conflict_insert
from app.store.repos.rowcount import rowcount
from app.store.tables.idempotency import IdempotencyKeyRow
from app.store.tables.types import utcnow

if TYPE_CHECKING:
    from app.store.database import Database, Tx

# Lapsed keys of other callers deleted with each key kept: more than one request keeps, so
# the table shrinks back to the keys alive.
SWEEP = 100


@dataclass(frozen=True, slots=True)
class IdempotencyKey:
    """A request's key, scoped to its caller, and the fingerprint of the request."""

    owner_id: str
    key: str
    fingerprint: str
    ttl: timedelta


@dataclass(frozen=True, slots=True)
class Outcome:
    """What the first request answered: its status and JSON body; the conversation it is
    about (deleted with it), when it is about one."""

    status: int
    body: dict[str, Any]
    conversation_id: str | None = None


class KeyTaken(Exception):
    """A concurrent request kept an outcome under this key first: roll this unit back."""


def key_reused() -> InvalidRequest:
    return InvalidRequest(
        "This Idempotency-Key was already used with another request.",
        code="idempotency_key_reused",
        status=422,
        param="Idempotency-Key",
    )


def key_in_flight() -> RetryLater:
    return RetryLater(
        "A request with this Idempotency-Key is still being handled; try again shortly.",
        code="idempotency_key_in_flight",
        status=409,
        retry_after=1.0,
    )


class IdempotencyRepo:
    def __init__(self, session: AsyncSession) -> None:
        self._session = session

    async def outcome(self, key: IdempotencyKey) -> Outcome | None:
        """The outcome kept under the caller's unexpired key, if any; a key kept for
        another request is `key_reused()`."""
        row = await self._session.scalar(
            select(IdempotencyKeyRow).where(
                IdempotencyKeyRow.owner_id == key.owner_id,
                IdempotencyKeyRow.key == key.key,
                IdempotencyKeyRow.expires_at > utcnow(),
            )
        )
        if row is None:
            return None
        if row.fingerprint != key.fingerprint:
            raise key_reused()
        return Outcome(status=row.status, body=row.body)

    async def held(self, key: IdempotencyKey) -> bool:
        """Whether the caller's key is kept, unexpired, whatever request it was kept for."""
        kept = await self._session.scalar(
            select(IdempotencyKeyRow.key).where(
                IdempotencyKeyRow.owner_id == key.owner_id,
                IdempotencyKeyRow.key == key.key,
                IdempotencyKeyRow.expires_at > utcnow(),
            )
        )
        return kept is not None

    async def forget(self, key: IdempotencyKey) -> None:
        """The caller's key free again, in this unit (its outcome is about nothing now)."""
        table = IdempotencyKeyRow
        await self._session.execute(
            delete(table).where(table.owner_id == key.owner_id, table.key == key.key)
        )

    async def keep(self, key: IdempotencyKey, outcome: Outcome) -> None:
        """Keep `outcome` under the key, in this unit; `KeyTaken` when a concurrent
        request kept one first (on Postgres the INSERT waits for its transaction)."""
        now = utcnow()
        table = IdempotencyKeyRow
        await self._session.execute(
            delete(table).where(table.owner_id == key.owner_id, table.expires_at <= now)
        )
        lapsed = (
            select(table.owner_id, table.key)
            .where(table.expires_at <= now)
            .limit(SWEEP)
            .with_for_update(skip_locked=True)
        )
        await self._session.execute(
            delete(table).where(tuple_(table.owner_id, table.key).in_(lapsed))
        )
        result = await self._session.execute(
            conflict_insert(self._session, table)
            .values(
                owner_id=key.owner_id,
                key=key.key,
                fingerprint=key.fingerprint,
                status=outcome.status,
                body=outcome.body,
                created_at=now,
                expires_at=now + key.ttl,
                conversation_id=outcome.conversation_id,
            )
            .on_conflict_do_nothing(index_elements=["owner_id", "key"])
        )
        if rowcount(result) == 0:
            raise KeyTaken(key.key)


async def kept_outcome(db: Database, key: IdempotencyKey) -> Outcome | None:
    """The outcome kept under the key, read in a short unit of its own."""
    async with db.read() as tx:
        return await tx.idempotency.outcome(key)


async def after_collision(db: Database, key: IdempotencyKey) -> Outcome:
    """The outcome of the concurrent request that took the key first."""
    kept = await kept_outcome(db, key)
    if kept is None:
        raise key_in_flight()
    return kept


async def once(
    db: Database,
    key: IdempotencyKey,
    work: Callable[[Tx], Awaitable[Outcome]],
    *,
    gone: Callable[[Tx, Outcome], Awaitable[bool]] | None = None,
) -> Outcome:
    """`work`'s outcome, kept under the key in `work`'s own transaction; or, when the key
    already holds one, that outcome, and `work` does not run. `gone` tells a kept outcome
    whose thing was deleted since (read in the same transaction): the key is then
    forgotten and `work` runs, as for a key never sent."""
    try:
        async with db.write() as tx:
            kept = await tx.idempotency.outcome(key)
            if kept is not None and (gone is None or not await gone(tx, kept)):
                return kept
            if kept is not None:
                await tx.idempotency.forget(key)
            outcome = await work(tx)
            await tx.idempotency.keep(key, outcome)
            return outcome
    except KeyTaken:
        return await after_collision(db, key)
