"""The in-memory run log: gap-free sequence numbers and readers that follow from anywhere."""

from __future__ import annotations

import asyncio

import pytest

from app.domain.events import SequencedEvent, TextDeltaEvent
from app.runs.log import RunLog


def delta(text: str) -> TextDeltaEvent:
    return TextDeltaEvent(run_id="run_1", message_id="msg_1", delta=text)


async def collect(log: RunLog, after: int = 0) -> list[SequencedEvent]:
    out: list[SequencedEvent] = []
    async for batch in log.follow(after):
        out += batch
    return out


def test_appended_events_are_numbered_from_one_without_gaps() -> None:
    log = RunLog("run_1")

    items = [log.append(delta(str(i))) for i in range(5)]

    assert [i.seq for i in items] == [1, 2, 3, 4, 5]
    assert log.last_seq == 5


async def test_a_reader_after_n_gets_exactly_the_later_events() -> None:
    log = RunLog("run_1")
    for i in range(6):
        log.append(delta(str(i)))
    log.close()

    events = await collect(log, after=4)

    assert [e.seq for e in events] == [5, 6]


async def test_a_live_reader_sees_new_events_and_ends_when_the_log_closes() -> None:
    log = RunLog("run_1")
    log.append(delta("a"))
    reader = asyncio.create_task(collect(log))
    await asyncio.sleep(0)

    log.append(delta("b"))
    await asyncio.sleep(0)
    log.append(delta("c"))
    log.close()

    events = await asyncio.wait_for(reader, timeout=5)
    assert [e.event.delta for e in events] == ["a", "b", "c"]  # type: ignore[union-attr]


async def test_a_reader_that_goes_away_leaves_the_other_waiting_readers_following() -> None:
    # Two tabs follow one run; closing one (its reader cancelled while it waits for the
    # next event) must not wake or end the other.
    log = RunLog("run_1")
    gone = asyncio.create_task(collect(log))
    stays = asyncio.create_task(collect(log))
    await asyncio.sleep(0)

    gone.cancel()
    await asyncio.sleep(0)
    log.append(delta("a"))
    await asyncio.sleep(0)
    log.append(delta("b"))
    log.close()

    events = await asyncio.wait_for(stays, timeout=5)
    assert [e.event.delta for e in events] == ["a", "b"]  # type: ignore[union-attr]
    assert gone.cancelled()


async def test_a_reader_that_falls_behind_gets_the_backlog_as_one_batch() -> None:
    log = RunLog("run_1")
    for i in range(10):
        log.append(delta(str(i)))
    log.close()

    batches = [batch async for batch in log.follow(0)]

    assert [len(b) for b in batches] == [10]


def test_a_closed_log_refuses_more_events() -> None:
    log = RunLog("run_1")
    log.close()

    with pytest.raises(RuntimeError):
        log.append(delta("late"))


async def test_a_log_that_starts_later_continues_the_numbering() -> None:
    log = RunLog("run_1", first_seq=8)

    item = log.append(delta("x"))
    log.close()

    assert item.seq == 8
    assert log.holds(7)
    assert not log.holds(3)
    assert [e.seq for e in await collect(log, after=7)] == [8]


async def test_the_only_reader_releases_what_it_took_and_still_gets_everything() -> None:
    log = RunLog("run_1")
    held: list[int] = []
    seen: list[int] = []

    async def read() -> None:
        async for batch in log.follow(0, release=True):
            seen.extend(e.seq for e in batch)
            held.append(len(log.events))

    reader = asyncio.create_task(read())
    for i in range(200):
        log.append(delta(str(i)))
        await asyncio.sleep(0)  # the reader takes each event as it comes
    log.close()
    await reader

    assert seen == list(range(1, 201))
    assert max(held) <= 2  # never more than the batch in hand (and one just appended)
    assert log.events == [] and log.last_seq == 200
    assert not log.holds(0)  # released events cannot be read again from memory


async def test_a_reader_ahead_of_the_released_part_is_unaffected() -> None:
    log = RunLog("run_1")
    for i in range(10):
        log.append(delta(str(i)))
    taker = log.follow(0, release=True)
    assert [e.seq for e in await anext(taker)] == list(range(1, 11))
    for i in range(10, 15):
        log.append(delta(str(i)))
    assert [e.seq for e in await anext(taker)] == [11, 12, 13, 14, 15]  # releases 1..10
    log.close()

    assert [e.seq for e in await collect(log, after=12)] == [13, 14, 15]


async def test_a_log_kept_as_json_only_reads_the_same_events_and_bytes() -> None:
    log = RunLog("run_1")
    for i in range(3):
        log.append(delta(str(i)))
    log.close()
    before = await collect(log)
    encoded = [item.json() for item in before]

    log.keep_json_only()

    after = await collect(log)
    assert not [item.seq for item in after if item.parsed]
    assert [item.json() for item in after] == encoded
    assert [item.event for item in after] == [delta(str(i)) for i in range(3)]
