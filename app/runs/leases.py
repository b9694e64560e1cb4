"""Run leases: how instances sharing a database tell a live run from a dead process's.

Every conversation run row carries the id of the instance running it and a heartbeat.
This keeper renews the heartbeats of the runs this instance holds, well within the lease
(and stops those whose row keeps a cancel another instance received), and sweeps for runs
whose lease lapsed (their process died): those are closed as `interrupted`, their partial
message kept, and `on_recovered` hears of each (the limits free its slot). Starting a
second instance therefore never closes the first one's live runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Collection
from typing import Protocol

from app.runs.journal import RunJournal

log = logging.getLogger("chat_bff.runs")


def renewal_interval(lease_seconds: float) -> float:
    """How often leases are renewed (and cancels kept on run rows applied): a third of the
    lease, so two renewals may fail before it lapses."""
    return max(lease_seconds / 3, 0.05)


class Holder(Protocol):
    """The run manager, as the lease keeper sees it."""

    def held(self) -> list[str]:
        """Ids of the conversation runs this instance answers for."""
        ...

    async def settle(self) -> None:
        """Store what is still unstored of ended runs."""
        ...

    def cancelled_elsewhere(self, run_ids: Collection[str]) -> None:
        """Stop these runs: a cancel for them reached another instance."""
        ...


class LeaseKeeper:
    def __init__(
        self,
        journal: RunJournal,
        holder: Holder,
        *,
        lease_seconds: float,
        on_recovered: Callable[[str, str], Awaitable[None]] | None = None,
    ) -> None:
        self._journal = journal
        self._holder = holder
        self._lease = lease_seconds
        self._on_recovered = on_recovered
        self._task: asyncio.Task[None] | None = None

    async def recover(self) -> int:
        """Close runs a dead process left running: status interrupted, message kept."""
        closed = await self._journal.recover_interrupted(
            lease_seconds=self._lease, held=self._holder.held()
        )
        if self._on_recovered is not None:
            for owner_id, run_id in closed:
                try:
                    await self._on_recovered(owner_id, run_id)
                except Exception:
                    log.exception("could not free a recovered run", extra={"run_id": run_id})
        return len(closed)

    async def start(self) -> int:
        """Close what dead processes left running, then keep leases and sweep for more.

        Returns how many runs were closed now. A process killed just before this one
        started still holds fresh leases: the sweep closes its runs once they lapse.
        """
        closed = await self.recover()
        self._task = asyncio.get_running_loop().create_task(self._keep(), name="run leases")
        return closed

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _keep(self) -> None:
        interval = renewal_interval(self._lease)
        while True:
            await asyncio.sleep(interval)
            try:
                await self._holder.settle()
                # A cancel another instance received is applied here at the latest, when
                # its message on the bus was lost.
                self._holder.cancelled_elsewhere(await self._journal.renew(self._holder.held()))
                closed = await self.recover()
                if closed:
                    log.warning("closed runs of a stopped instance", extra={"runs": closed})
            except Exception:
                log.exception("could not renew run leases")
