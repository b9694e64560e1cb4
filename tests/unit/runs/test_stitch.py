"""A reader of another instance's run gets every event once and in order, however the
live messages and the database interleave: duplicates dropped, events past a hole held
until the hole is filled, nothing after `run_end`."""

from __future__ import annotations

from app.domain.events import RunEnd, SequencedEvent, TextDeltaEvent
from app.runs.relay import decode, encode
from app.runs.remote import Stitch


def delta(seq: int) -> SequencedEvent:
    return SequencedEvent(
        seq=seq, event=TextDeltaEvent(run_id="r", message_id="m", delta=f"line {seq}\n")
    )


def end(seq: int) -> SequencedEvent:
    return SequencedEvent(seq=seq, event=RunEnd(run_id="r", status="completed"))


def seqs(batch: list[SequencedEvent]) -> list[int]:
    return [item.seq for item in batch]


def test_a_batch_crosses_the_bus_byte_for_byte() -> None:
    batch = [delta(1), delta(2), end(3)]
    carried = decode(encode(batch))
    assert carried == batch
    assert [item.json() for item in carried] == [item.json() for item in batch]


def test_live_events_after_the_position_pass_and_repeats_are_dropped() -> None:
    stitch = Stitch(2)
    assert seqs(stitch.live([delta(1), delta(2), delta(3), delta(4)])) == [3, 4]
    assert seqs(stitch.live([delta(4), delta(5)])) == [5]
    assert stitch.position == 5


def test_events_past_a_hole_wait_until_the_database_fills_it() -> None:
    stitch = Stitch(0)
    assert stitch.live([delta(4), delta(5)]) == []  # 1..3 not seen yet
    assert stitch.pending
    assert seqs(stitch.stored([delta(1), delta(2), delta(3)])) == [1, 2, 3, 4, 5]
    assert not stitch.pending and stitch.position == 5


def test_events_past_a_hole_wait_until_the_owner_fills_it() -> None:
    stitch = Stitch(0)
    assert stitch.live([delta(3)]) == []
    assert seqs(stitch.live([delta(1), delta(2), delta(3)])) == [1, 2, 3]


def test_the_database_overrides_what_is_held_and_run_end_ends_it() -> None:
    stitch = Stitch(0)
    stitch.live([delta(2), delta(3)])
    got = stitch.stored([delta(1), delta(2), delta(3), end(4)])
    assert seqs(got) == [1, 2, 3, 4] and stitch.ended
    assert stitch.live([delta(5)]) == []


def test_a_closing_jump_from_the_database_is_taken_as_it_is() -> None:
    """A run closed after its process died ends past a gap no live event spans."""
    stitch = Stitch(2)
    got = stitch.stored([delta(1_000_003), end(1_000_004)])
    assert seqs(got) == [1_000_003, 1_000_004] and stitch.ended
