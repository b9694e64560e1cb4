"""A turn started once under an `Idempotency-Key`: the send, edit and regenerate routes and
a `conversation`'s `POST /v1/responses` share it.

The key's outcome (the run id, and whatever the route answers besides) is kept in the
transaction that stores the turn and claims the conversation (`app.runs.turns.KeepStart`),
so a lost COMMIT kept both or neither:

    the caller's key is ...                         `start_once` answers
    not kept                                        the new run (`start` ran, keeping it)
    kept, same request                              the kept outcome; `start` does not run
    kept by a concurrent repeat meanwhile           its outcome (`KeyTaken` rolled this back)
    holding the conversation with a repeat's run    its outcome (`run_active` from `start`)
    kept for another request                        422 `idempotency_key_reused`

The route then answers a kept outcome by following that run, never by starting another.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from app.domain.errors import Conflict
from app.runs.handle import RunHandle
from app.runs.turns import KeepStart
from app.store.database import Database, Tx
from app.store.idempotency import IdempotencyKey, KeyTaken, Outcome, after_collision, kept_outcome

# What the route keeps for a run it starts: told the run's id and whether input was cut.
KeptAs = Callable[[str, bool], Outcome]


async def start_once(
    db: Database,
    key: IdempotencyKey,
    start: Callable[[KeepStart], Awaitable[RunHandle]],
    kept_as: KeptAs,
) -> RunHandle | Outcome:
    """The run `start` starts, its outcome kept under the key in the transaction that
    starts it; or, when the key already names a run, that run's kept outcome."""
    kept = await kept_outcome(db, key)
    if kept is not None:
        return kept

    async def keep(tx: Tx, run_id: str, truncated: bool) -> None:
        await tx.idempotency.keep(key, kept_as(run_id, truncated))

    try:
        return await start(keep)
    except KeyTaken:  # a concurrent repeat kept its run first
        return await after_collision(db, key)
    except Conflict as exc:  # ... or holds the conversation with it
        kept = await kept_outcome(db, key) if exc.code == "run_active" else None
        if kept is None:
            raise
        return kept


def run_id_of(outcome: Outcome) -> str:
    """The run a kept outcome names."""
    return str(outcome.body["run_id"])
