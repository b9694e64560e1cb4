"""Runs across instances on a shared bus: the owner's side.

The instance running a conversation run publishes its events on `run:<run_id>` as they
are appended, in batches (everything that piled up since the last publish, one message),
each event with its sequence number. Readers on other instances follow that topic
(`app.runs.remote`) and fill any hole from the database, or from the owner: the run's
whole log is in the owner's memory, so a reader that finds a hole asks (`catchup`) and
the owner publishes what came after the reader's position on the run's topic again.

Every instance listens on `control`, where requests that must reach whichever instance
runs something are broadcast: `cancel` (the owner stops the run), `catchup` (above) and
`forget` (a purged conversation's finished logs leave every instance's memory). Pub/sub
loses what is published while a listener's connection is down; a lost `catchup` or
`forget` costs a reader a database read, but a lost `cancel` would let the run go on, so
its sender also keeps it on the run's row, which the owner reads when its control
subscription reports a gap (`recheck`) and at each lease renewal.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from app.domain.events import RUN_EVENT_ADAPTER, SequencedEvent
from app.runs.active import ActiveRun
from app.runs.bus import Bus

log = logging.getLogger("chat_bff.runs")

CONTROL = "control"
# At most this many events are published again for one catch-up request; a reader further
# behind reads the rest from the database.
CATCHUP_LIMIT = 4096


def run_topic(run_id: str) -> str:
    return f"run:{run_id}"


def encode(batch: list[SequencedEvent]) -> bytes:
    """One message for a batch: `<seq> <event JSON>` lines (compact JSON has no newline)."""
    return b"\n".join(b"%d %s" % (item.seq, item.json()) for item in batch)


def decode(message: bytes) -> list[SequencedEvent]:
    batch = []
    for line in message.split(b"\n"):
        seq, _, payload = line.partition(b" ")
        event = RUN_EVENT_ADAPTER.validate_json(payload)
        batch.append(SequencedEvent(seq=int(seq), event=event, encoded=payload))
    return batch


class Relay:
    """Publishes the runs of this instance and answers the control topic."""

    def __init__(
        self,
        bus: Bus,
        *,
        local: Callable[[str], ActiveRun | None],
        stop: Callable[[ActiveRun], None],
        forget: Callable[[str], None],
        recheck: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self._bus = bus
        self._local = local
        self._stop = stop
        self._forget = forget
        self._recheck = recheck
        self._carriers: set[asyncio.Task[None]] = set()
        self._listener: asyncio.Task[None] | None = None

    # -- the owner's side -------------------------------------------------------------

    def carry(self, run: ActiveRun) -> None:
        """Publish the run's events until its log closes."""
        task = asyncio.get_running_loop().create_task(self._carry(run), name=f"relay {run.run_id}")
        self._carriers.add(task)
        task.add_done_callback(self._carriers.discard)

    async def _carry(self, run: ActiveRun) -> None:
        """Publish each batch; a batch the bus refuses is left to the database. Said once
        a run, with the count at its end: while Redis is down every batch of every run
        fails (the breaker already said so, once), and a line each flooded the log."""
        topic = run_topic(run.run_id)
        failed = 0
        async for batch in run.log.follow(0):
            try:
                await self._bus.publish(topic, encode(batch))
            except Exception as exc:  # noqa: BLE001
                # Readers elsewhere find the hole and fill it from the database.
                failed += 1
                if failed == 1:
                    log.warning(
                        "could not publish run events; readers elsewhere read them from the "
                        "database (counted until the run ends)",
                        extra={"run_id": run.run_id, "error_type": type(exc).__name__},
                    )
        if failed > 1:
            log.info("run events left unpublished", extra={"run_id": run.run_id, "batches": failed})

    # -- requests to whichever instance runs something --------------------------------

    async def request(self, op: str, **fields: Any) -> None:
        await self._bus.publish(CONTROL, json.dumps({"op": op, **fields}).encode())

    async def start(self) -> None:
        ready = asyncio.Event()
        self._listener = asyncio.get_running_loop().create_task(
            self._listen(ready), name="run control"
        )
        await ready.wait()

    async def stop(self, grace_seconds: float) -> None:
        if self._carriers:
            await asyncio.wait(list(self._carriers), timeout=grace_seconds)
        if self._listener is not None:
            self._listener.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._listener

    async def _listen(self, ready: asyncio.Event) -> None:
        async with self._bus.subscribe(CONTROL) as messages:
            ready.set()
            async for message in messages:
                try:
                    if isinstance(message, bytes):
                        await self._handle(json.loads(message))
                    elif self._recheck is not None:
                        # Requests may have been lost (the connection broke, or came back):
                        # a cancel is kept in the database too, read it there.
                        await self._recheck()
                except Exception:
                    log.exception("could not handle a run control message")

    async def _handle(self, request: dict[str, Any]) -> None:
        op = request.get("op")
        if op == "forget":
            self._forget(str(request["conversation_id"]))
            return
        run = self._local(str(request.get("run_id")))
        if run is None:
            return  # another instance's run (or long gone)
        if op == "cancel":
            mine = run.owner_id == request.get("owner_id")
            if mine and run.task is not None and not run.task.done():
                self._stop(run)
        elif op == "catchup":
            after = int(request["after"])
            held = run.log.since(after)[:CATCHUP_LIMIT]
            if held:
                await self._bus.publish(run_topic(run.run_id), encode(held))
