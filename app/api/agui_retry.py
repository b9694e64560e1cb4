"""AG-UI's `runId` as an idempotency key: a client that sends the same `RunAgentInput`
again (a dropped connection, `HttpAgent` retried with the same input) re-attaches to the
run the first one started instead of starting a second turn.

The key is the caller's own (`app.store.idempotency`, kept in the transaction that
stores the user message and starts the run), derived from the `threadId`, the `runId` and
the whole input (canonical JSON: key order does not make another input). So, per caller:

    the thread, runId and input are ...      then
    new                                       runs, and keeps them -> our run id
    kept                                      replays that run's events from the start
                                              (then live while it goes on): no new turn
    kept by a concurrent send meanwhile       the same: its run, committed first, replays

A runId sent again with another input is another turn, as it was before runIds were
kept: AG-UI clients make a runId per run, but one that reuses a fixed runId must not be
refused. Inputs that start a turn (a new user message) are kept, and so are client tool
results that start the run continuing the thread: sent again while that run goes on, they
re-attach to it (their results were taken; `results_keeper`). Once it ended, a repeated
`resume` or tool results are refused as before (409 already decided / 404 nothing
waiting), as a decision is never taken twice.

But a `resume` input's decisions and answers commit before the run that continues the
thread starts, so an outage in between (a 503) left the thread waiting, every retry
refused. Its sending is marked first, under a key of its own (`sent_before`): the same
input sent again takes a decision or answer already taken exactly as it asks as its own,
not a second one, and continues the thread if nothing did yet (`taken_call`); when the
thread went on already it is refused as before.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from datetime import timedelta

from ag_ui.core import RunAgentInput

from app.api.idempotency import fingerprint
from app.runs.turns import KeepContinuation, KeepStart
from app.store.database import Database, Tx
from app.store.idempotency import IdempotencyKey, KeyTaken, Outcome, after_collision, kept_outcome
from app.toolruntime.decision_replay import DECIDED

PATH = "/api/agui"


def run_key(owner_id: str, body: RunAgentInput, ttl: timedelta) -> IdempotencyKey:
    """The caller's key for the input's `threadId`, `runId` and whole input."""
    canonical = json.dumps(body.model_dump(mode="json", by_alias=True), sort_keys=True)
    ids = hashlib.sha256(f"{body.thread_id}\n{body.run_id}\n{canonical}".encode()).hexdigest()
    return IdempotencyKey(
        owner_id, f"agui-run:{ids}", fingerprint("POST", PATH, canonical.encode()), ttl
    )


async def kept_run(db: Database, key: IdempotencyKey) -> str | None:
    """Our run id the input started, if it started one."""
    kept = await kept_outcome(db, key)
    return None if kept is None else str(kept.body["run_id"])


async def collided_run(db: Database, key: IdempotencyKey) -> str:
    """Our run id a concurrent same input started first (it took the key: its outcome is
    committed, read as any idempotent create reads the outcome it collided with)."""
    first = await after_collision(db, key)
    return str(first.body["run_id"])


async def sent_before(db: Database, key: IdempotencyKey, conversation_id: str) -> bool:
    """Whether this very continuing input was sent before (its decisions and answers may
    have committed without its run, in an outage); from now on it has been (a mark kept
    with the thread's conversation, purged with it)."""
    sent = replace(key, key=f"agui-sent:{key.key.removeprefix('agui-run:')}")
    if await kept_outcome(db, sent) is not None:
        return True
    try:
        async with db.write() as tx:
            await tx.idempotency.keep(sent, Outcome(202, {}, conversation_id))
    except KeyTaken:  # a concurrent sending of it
        return True
    return False


async def taken_call(
    db: Database, owner_id: str, approval_ids: list[str], question_ids: list[str]
) -> str | None:
    """A call of the input's entries when every one was decided or answered already (the
    thread continues only while its message still holds that call); None otherwise."""
    calls: list[str] = []
    async with db.read() as tx:
        for approval_id in approval_ids:
            approval = await tx.approvals.get(owner_id, approval_id)
            if approval.status not in DECIDED:
                return None
            calls.append(approval.tool_call_id)
        for question_id in question_ids:
            question = await tx.elicitations.get(owner_id, question_id)
            if question is None or question.status != "answered":
                return None
            calls.append(question.tool_call_id)
    return calls[0] if calls else None


def results_keeper(key: IdempotencyKey, conversation_id: str) -> KeepContinuation:
    """Keeps the runId -> the run that tool results start, in the transaction that stores
    them (nothing while other calls still wait)."""

    async def keep(tx: Tx, run_id: str | None) -> None:
        if run_id is not None:
            await tx.idempotency.keep(key, Outcome(200, {"run_id": run_id}, conversation_id))

    return keep


def keeper(key: IdempotencyKey, conversation_id: str) -> KeepStart:
    """Keeps the runId -> our run id in the transaction that starts the run in the
    thread's conversation (purged with it)."""

    async def keep(tx: Tx, run_id: str, truncated: bool) -> None:
        await tx.idempotency.keep(key, Outcome(200, {"run_id": run_id}, conversation_id))

    return keep
