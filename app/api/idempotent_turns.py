"""A turn started once under an `Idempotency-Key`: the send, edit, regenerate and
tool-results routes and a `conversation`'s `POST /v1/responses` share it.

The key's outcome (the run id, and whatever the route answers besides) is kept in the
transaction that stores the turn and claims the conversation (`app.runs.turns.KeepStart`),
so a lost COMMIT kept both or neither:

    the caller's key is ...                         `start_once` answers
    not kept                                        what `start` answers (it kept it)
    kept, same request                              the kept outcome; `start` does not run
    kept by a concurrent repeat meanwhile           its outcome (`KeyTaken` rolled this back)
    kept by a repeat that `start` conflicts with    its outcome (`run_active`: the repeat's
                                                    run holds the conversation; tool
                                                    results it already answered)
    kept for another request                        422 `idempotency_key_reused`

The route then answers a kept outcome by following that run, never by starting another.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

from app.api.idempotency import RequestKey
from app.domain.errors import Conflict
from app.runs.handle import RunHandle
from app.runs.turns import KeepStart
from app.store.database import Database, Tx
from app.store.idempotency import IdempotencyKey, KeyTaken, Outcome, after_collision, kept_outcome

T = TypeVar("T")
# Keeps the route's outcome under the key, in the transaction that starts the turn.
KeepOutcome = Callable[[Tx, Outcome], Awaitable[None]]


async def start_once(
    db: Database, key: IdempotencyKey, start: Callable[[KeepOutcome], Awaitable[T]]
) -> T | Outcome:
    """What `start` answers, its outcome kept under the key (by `start`, through the
    `KeepOutcome` it is given) in the transaction that starts the turn; or, when the key
    already holds an outcome, that outcome."""
    kept = await kept_outcome(db, key)
    if kept is not None:
        return kept

    async def keep(tx: Tx, outcome: Outcome) -> None:
        await tx.idempotency.keep(key, outcome)

    try:
        return await start(keep)
    except KeyTaken:  # a concurrent repeat kept its outcome first
        return await after_collision(db, key)
    except Conflict:  # ... or holds the conversation (`run_active`), or answered first
        kept = await kept_outcome(db, key)
        if kept is None:
            raise
        return kept


async def start_run_once(
    db: Database,
    key: IdempotencyKey,
    start: Callable[[KeepStart], Awaitable[RunHandle]],
    kept_as: Callable[[str, bool], Outcome],
) -> RunHandle | Outcome:
    """`start_once` for a turn that always starts a run: `kept_as` makes the outcome kept
    from the run's id and whether the input was cut."""

    def started(keep: KeepOutcome) -> Awaitable[RunHandle]:
        async def keep_run(tx: Tx, run_id: str, truncated: bool) -> None:
            await keep(tx, kept_as(run_id, truncated))

        return start(keep_run)

    return await start_once(db, key, started)


async def run_once(
    db: Database,
    owner_id: str,
    key: RequestKey | None,
    start: Callable[[KeepStart | None], Awaitable[RunHandle]],
    kept_as: Callable[[str, bool], Outcome],
) -> RunHandle | Outcome:
    """`start_run_once` under the request's key; without one, `start` as it is."""
    if key is None:
        return await start(None)
    return await start_run_once(db, key.of(owner_id), start, kept_as)


def run_id_of(outcome: Outcome) -> str | None:
    """The run a kept outcome names (None: the request started none)."""
    run_id = outcome.body.get("run_id")
    return None if run_id is None else str(run_id)
