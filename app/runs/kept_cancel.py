"""A cancel for a run another instance runs: kept on the run's row, then waited for.

The request is written on the run's row first (`RunJournal.request_cancel`). The owner
reads it at each lease renewal (every third of `RUN_LEASE_SECONDS`, `app.runs.leases`)
and stops the run, with or without Redis. With a bus the request is also published, so
the owner usually stops the run at once (`RemoteFollower.cancel`); without one the
process that received the cancel waits for the run's end in the database here.

Either way the sender waits for the end and answers the run's final status; past the wait
it answers 503 `run_unreachable` with `Retry-After` (the cancel stands; sending it again
gives the final status), never `running` as if nothing had been asked. Through the bus the
wait is `CANCEL_WAIT_SECONDS`; without one it spans the owner's next renewal
(`cancel_wait`), else every cancel under a long lease would be a 503 first. The row is read
often at first, then less and less.
"""

from __future__ import annotations

import asyncio
import time
from typing import cast

from app.domain.errors import NotFound, Unavailable
from app.domain.events import RunStatus
from app.runs.journal import RunJournal
from app.runs.leases import renewal_interval
from app.store.records import RunRecord

# How long a cancel sent to another instance's run is waited for (then 503 run_unreachable);
# without a bus, at least this long, at most LONGEST_WAIT_FACTOR times as long (60 s).
CANCEL_WAIT_SECONDS = 10.0
LONGEST_WAIT_FACTOR = 6.0
# When the end did not come in time, or a cancel could not be sent, retry after this.
UNREACHABLE_RETRY_SECONDS = 2.0
# How often the bus is checked for the run's end; without a bus, the first wait between
# reads of the run's row, each next one half as long again, up to LONGEST_POLL_SECONDS.
POLL_SECONDS = 0.25
LONGEST_POLL_SECONDS = 2.0


def cancel_wait(lease_seconds: float) -> float:
    """How long a cancel kept on the row is waited for: the owner's renewal interval and
    half as long again (for the run to stop and store its end), bounded."""
    wanted = 1.5 * renewal_interval(lease_seconds)
    return min(LONGEST_WAIT_FACTOR * CANCEL_WAIT_SECONDS, max(CANCEL_WAIT_SECONDS, wanted))


async def cancel_by_row(
    journal: RunJournal,
    owner_id: str,
    run_id: str,
    conversation_id: str | None,
    *,
    lease_seconds: float,
) -> RunStatus:
    """Keep the cancel on the run's row and wait for the owner to apply it (no bus)."""
    await journal.request_cancel(owner_id, run_id)
    deadline = time.monotonic() + cancel_wait(lease_seconds)
    pause = POLL_SECONDS
    while (left := deadline - time.monotonic()) > 0:
        await asyncio.sleep(min(pause, left))
        pause = min(pause * 1.5, LONGEST_POLL_SECONDS)
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
