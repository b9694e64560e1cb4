"""Two instances on one database and no Redis: a cancel sent to the instance that does not
run the run is kept on the run's row; the owner stops the run at its next lease renewal
and the sender answers the final status, or a retryable 503 while the owner has not
applied it. Never `running`, as if nothing had been asked."""

from __future__ import annotations

import pytest

from app.runs import kept_cancel
from app.settings import Settings
from tests.api.runs.helpers import CONVERSATIONS, conversation, events
from tests.api.runs.test_two_instances import instances, streaming
from tests.fakes.db import MakeApi


async def test_a_cancel_sent_to_the_other_instance_stops_the_run_at_its_lease_renewal(
    make_api: MakeApi, app_settings: Settings
) -> None:
    # No Redis; leases renewed every half second (a third of RUN_LEASE_SECONDS).
    two = instances(make_api, app_settings, redis_url=None, run_lease_seconds=1.5)
    async with two as (a, b):
        cid, started = await streaming(a, delay_ms=200)  # 12 s of words
        cancel = f"{CONVERSATIONS}/{cid}/runs/{started['run_id']}/cancel"

        response = await b.post(cancel)

        assert response.status_code == 200, response.text
        assert response.json()["status"] == "cancelled"
        followed = await events(b, started["events_url"])
        assert followed[-1].event == "run_end"
        assert followed[-1].data["status"] == "cancelled"
        assert followed == await events(a, started["events_url"])
        assert (await conversation(b, cid))["active_run_id"] is None
        again = await b.post(cancel)
        assert again.status_code == 200 and again.json()["status"] == "cancelled"


async def test_a_cancel_the_owner_has_not_applied_yet_is_a_retryable_503(
    make_api: MakeApi, app_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(kept_cancel, "CANCEL_WAIT_SECONDS", 0.5)
    # No Redis, and no lease renewal within the test.
    two = instances(make_api, app_settings, redis_url=None, run_lease_seconds=900)
    async with two as (a, b):
        cid, started = await streaming(a, delay_ms=200)

        response = await b.post(f"{CONVERSATIONS}/{cid}/runs/{started['run_id']}/cancel")

        assert response.status_code == 503, response.text
        assert response.json()["error"]["code"] == "run_unreachable"
        assert int(response.headers["Retry-After"]) >= 1
        assert (await conversation(b, cid))["active_run_id"] == started["run_id"]


async def test_a_cancel_is_waited_for_until_the_owners_next_lease_renewal(
    make_api: MakeApi, app_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The shortest wait (10 s, here 1 s) is shorter than the time to the owner's next
    # renewal (a third of RUN_LEASE_SECONDS, here 3 s): the sender waits for it.
    monkeypatch.setattr(kept_cancel, "CANCEL_WAIT_SECONDS", 1.0)
    two = instances(make_api, app_settings, redis_url=None, run_lease_seconds=9.0)
    async with two as (a, b):
        cid, started = await streaming(a, delay_ms=200)

        response = await b.post(f"{CONVERSATIONS}/{cid}/runs/{started['run_id']}/cancel")

        assert response.status_code == 200, response.text
        assert response.json()["status"] == "cancelled"
        assert (await conversation(b, cid))["active_run_id"] is None
