"""A run hands the first piece of its answer to a waiting reader before it goes on."""

from __future__ import annotations

import asyncio

from app.domain.events import RunStart, SequencedEvent, TextDeltaEvent
from app.runs.active import ActiveRun
from app.runs.log import RunLog


def _run() -> ActiveRun:
    return ActiveRun(
        run_id="run_1",
        owner_id="user_1",
        conversation_id=None,
        message_id="msg_1",
        log=RunLog("run_1"),
        writer=None,
    )


def _delta(text: str) -> TextDeltaEvent:
    return TextDeltaEvent(run_id="run_1", message_id="msg_1", delta=text)


async def _read(run: ActiveRun, batches: list[list[SequencedEvent]]) -> None:
    async for batch in run.log.follow(0):
        batches.append(batch)


async def test_a_waiting_reader_gets_the_first_delta_before_the_run_emits_more() -> None:
    run = _run()
    batches: list[list[SequencedEvent]] = []
    reader = asyncio.create_task(_read(run, batches))
    await run.emit(RunStart(run_id="run_1", model="m", message_id="msg_1"))
    await asyncio.sleep(0)  # the reader takes run_start and waits again

    await run.emit(_delta("a"))
    taken_before_the_rest = [item.seq for batch in batches for item in batch]
    for text in "bcd":  # the rest of one upstream read: folded without a pause
        await run.emit(_delta(text))
    run.log.close()
    await asyncio.wait_for(reader, timeout=5)

    assert taken_before_the_rest == [1, 2]
    assert [[item.seq for item in batch] for batch in batches] == [[1], [2], [3, 4, 5]]


async def test_without_a_waiting_reader_the_first_delta_is_only_appended() -> None:
    run = _run()

    await run.emit(_delta("a"))
    await run.emit(_delta("b"))

    assert run.log.last_seq == 2
    assert run.answering
