"""The owner's relay while its bus refuses every publish (Redis down): readers elsewhere
read the database, and the log says so once a run, not once a batch."""

from __future__ import annotations

import asyncio
import logging

import pytest

from app.domain.events import TextDeltaEvent
from app.runs.active import ActiveRun
from app.runs.bus import LocalBus
from app.runs.log import RunLog
from app.runs.relay import Relay


class RefusingBus(LocalBus):
    shared = True

    def __init__(self) -> None:
        super().__init__()
        self.refused = 0

    async def publish(self, topic: str, message: bytes) -> None:
        self.refused += 1
        raise ConnectionError("Redis skipped for 2 s: unreachable")


async def test_a_run_whose_every_batch_is_refused_logs_one_warning_and_the_count(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="chat_bff.runs")
    bus = RefusingBus()
    relay = Relay(bus, local=lambda _: None, stop=lambda _: None, forget=lambda _: None)
    run = ActiveRun("run_1", "alice", "conv_1", "msg_1", RunLog("run_1"), writer=None)
    relay.carry(run)
    for n in range(40):  # forty batches: the relay publishes between appends
        run.log.append(TextDeltaEvent.of("run_1", "msg_1", f"w{n} "))
        for _ in range(1000):  # a few loop turns; bounded all the same
            if bus.refused > n:
                break
            await asyncio.sleep(0)
    run.log.close()
    await relay.stop(grace_seconds=5)

    records = [r for r in caplog.records if r.name == "chat_bff.runs"]
    assert [r.levelno for r in records] == [logging.WARNING, logging.INFO], records
    assert vars(records[1])["batches"] == 40
