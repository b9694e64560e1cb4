"""An id is what `uuid.uuid4().hex` would have written for the same random bytes."""

from __future__ import annotations

import os
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.domain.ids import uuid4_hex


@given(st.binary(min_size=16, max_size=16))
def test_an_id_is_uuid4s_hex_of_the_same_bytes(random: bytes) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(os, "urandom", lambda size: random[:size])
        assert uuid4_hex() == uuid.UUID(bytes=random, version=4).hex


def test_ids_are_version_4_uuids_and_differ() -> None:
    made = {uuid4_hex() for _ in range(100)}
    assert len(made) == 100
    for text in made:
        parsed = uuid.UUID(hex=text)
        assert (parsed.version, parsed.variant, parsed.hex) == (4, uuid.RFC_4122, text)
