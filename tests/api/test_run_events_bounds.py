"""Found by Schemathesis: a resume position past the event log's 32-bit sequence column
reached the database driver and answered 500. It is refused as bad input instead."""

from __future__ import annotations

import pytest

from app.api.exact_params import RUN_SEQ_MAX as MAX_SEQ
from tests.fakes.db import ApiClient


async def _finished_run_events_url(api: ApiClient) -> str:
    created = await api.post("/api/conversations", json={})
    started = await api.post(
        f"/api/conversations/{created.json()['id']}/messages", json={"content": "Hi"}
    )
    assert started.status_code == 202, started.text
    url: str = started.json()["events_url"]
    await api.get(url)  # reads to run_end: the run has finished
    return url


@pytest.mark.parametrize("after", [MAX_SEQ + 1, 40571119499296989180])
async def test_an_after_beyond_any_sequence_number_is_422(api: ApiClient, after: int) -> None:
    url = await _finished_run_events_url(api)
    response = await api.get(url, params={"after": after})
    assert response.status_code == 422
    assert response.json()["error"]["code"] == "validation_error"


@pytest.mark.parametrize("last_event_id", [str(MAX_SEQ + 1), "40571119499296989180"])
async def test_a_last_event_id_beyond_any_sequence_number_is_400(
    api: ApiClient, last_event_id: str
) -> None:
    url = await _finished_run_events_url(api)
    response = await api.get(url, headers={"Last-Event-ID": last_event_id})
    assert response.status_code == 400
    assert response.json()["error"]["param"] == "Last-Event-ID"


async def test_the_largest_sequence_number_is_accepted(api: ApiClient) -> None:
    url = await _finished_run_events_url(api)
    response = await api.get(url, params={"after": MAX_SEQ})
    # Nothing after it in a finished run: 204, which also stops an EventSource reconnecting.
    assert response.status_code == 204
    assert response.content == b""
