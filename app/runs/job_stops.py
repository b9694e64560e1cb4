"""Stopping a background job on the instance that runs it, through the shared bus.

A cancel is recorded in the database by whichever instance receives it. When another
instance runs the job, it is told on its own topic `jobs:<instance id>` and stops the
task at once (it checks the row first: a stale message stops nothing). Without a shared
bus, or when the message is lost, the owner's lease renewal notices the cancel within a
third of a lease.
"""

from __future__ import annotations

import asyncio
import logging

from app.runs.bus import Bus
from app.toolruntime.background import BackgroundJobs

log = logging.getLogger("chat_bff.runs")


def jobs_topic(instance_id: str) -> str:
    return f"jobs:{instance_id}"


class JobStops:
    def __init__(self, bus: Bus, jobs: BackgroundJobs) -> None:
        self._bus = bus
        self._jobs = jobs

    async def tell(self, instance_id: str, job_id: str) -> None:
        await self._bus.publish(jobs_topic(instance_id), job_id.encode())

    async def start(self) -> None:
        """Listen on this instance's topic, and have cancels elsewhere told through it."""
        ready = asyncio.Event()
        listener = asyncio.get_running_loop().create_task(
            self._listen(ready), name="background job stops"
        )
        self._jobs.adopt(listener)  # cancelled with the jobs at shutdown
        await ready.wait()
        self._jobs.tell = self.tell

    async def _listen(self, ready: asyncio.Event) -> None:
        async with self._bus.subscribe(jobs_topic(self._jobs.instance_id)) as messages:
            ready.set()
            async for message in messages:
                if not isinstance(message, bytes):
                    continue  # lost messages: the lease renewal notices those cancels
                try:
                    await self._jobs.stop_if_ended(message.decode())
                except Exception:
                    log.exception("could not stop a background job cancelled elsewhere")
