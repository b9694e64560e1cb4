"""A cancel for a run another instance runs: kept on the run's row, then waited for.

The request is written on the run's row first (`RunJournal.request_cancel`). The owner
reads it at each lease renewal (every third of `RUN_LEASE_SECONDS`, `app.runs.leases`)
and stops the run, with or without Redis. With a bus the request is also published, so
the owner usually stops the run at once (`RemoteFollower.cancel`); without one the
process that received the cancel waits for the run's end in the database here.

Either way the sender waits up to `CANCEL_WAIT_SECONDS` for the end and answers the run's
final status; past that it answers 503 `run_unreachable` with `Retry-After` (the cancel
stands; sending it again gives the final status), never `running` as if nothing had been
asked.
"""

from __future__ import annotations

import asyncio
import time
from typing import cast

from app.domain.errors import NotFound, Unavailable
from app.domain.events import RunStatus
from app.runs.journal import RunJournal
from app.store.records import RunRecord

# How long a cancel sent to another instance's run is waited for (then 503 run_unreachable).
CANCEL_WAIT_SECONDS = 10.0
# When the end did not come in time, or a cancel could not be sent, retry after this.
UNREACHABLE_RETRY_SECONDS = 2.0
# Without a bus, how often the run's row is read for its end (as readers poll its events).
POLL_SECONDS = 0.25


async def cancel_by_row(
    journal: RunJournal, owner_id: str, run_id: str, conversation_id: str | None
) -> RunStatus:
    """Keep the cancel on the run's row and wait for the owner to apply it (no bus)."""
    await journal.request_cancel(owner_id, run_id)
    deadline = time.monotonic() + CANCEL_WAIT_SECONDS
    while time.monotonic() < deadline:
        await asyncio.sleep(POLL_SECONDS)
        found = await journal.get_run(owner_id, run_id, conversation_id)
        if found is None or found.status != "running":
            return final_status(found)
    raise unreachable()


def final_status(record: RunRecord | None) -> RunStatus:
    """The status of a run no longer running; one purged meanwhile is not found, as a
    repeated cancel would say."""
    if record is None:
        raise NotFound("Run not found.")
    return cast("RunStatus", record.status)


def unreachable() -> Unavailable:
    return Unavailable(
        "The instance running this run has not confirmed the cancel yet; it is kept and "
        "the run stops when that instance next checks. Send the cancel again shortly for "
        "the run's final status.",
        code="run_unreachable",
        retry_after=UNREACHABLE_RETRY_SECONDS,
    )
