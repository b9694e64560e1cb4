"""The agent's unvalidated text delta is the validated event in every way a reader sees."""

from __future__ import annotations

import pickle

from hypothesis import given
from hypothesis import strategies as st

from app.domain.events import RUN_EVENT_ADAPTER, SequencedEvent, TextDeltaEvent


@given(st.text(), st.text(min_size=1), st.text(min_size=1))
def test_of_is_the_validated_event(delta: str, run_id: str, message_id: str) -> None:
    made = TextDeltaEvent.of(run_id, message_id, delta)
    validated = TextDeltaEvent(run_id=run_id, message_id=message_id, delta=delta)

    assert made == validated
    assert made.model_dump() == validated.model_dump()
    assert made.model_fields_set == validated.model_fields_set
    assert SequencedEvent(1, made).json() == SequencedEvent(1, validated).json()


def test_of_round_trips_through_the_event_union_and_copies() -> None:
    made = TextDeltaEvent.of("run_1", "msg_1", "héllo \n")

    parsed = RUN_EVENT_ADAPTER.validate_json(SequencedEvent(3, made).json())

    assert parsed == made
    assert pickle.loads(pickle.dumps(made)) == made
    assert made.model_copy(update={"delta": "x"}).delta == "x"
    assert made.delta == "héllo \n"
