"""A purge deletes the Idempotency-Key outcomes about the conversation, in its own
transaction: a keyed request sent again after the purge never answers the purged
conversation's body (its title, its items' text, its run) as if it still existed."""

from __future__ import annotations

from app.providers.scripted import ScriptedTurn
from tests.api.runs.helpers import play
from tests.api.test_idempotency_keys import ME, URL, client, keyed
from tests.fakes.db import ApiClient

__all__ = ["client"]  # the fixture: an app whose callers sign in as `me` and `other`


async def test_a_create_sent_again_after_its_conversation_was_purged_answers_no_purged_id(
    client: ApiClient,
) -> None:
    body = {"title": "Secret trip"}
    first = await client.post(URL, json=body, headers=keyed("c-1"))
    cid = first.json()["id"]
    purged = await client.delete(f"{URL}/{cid}", params={"purge": "true"}, headers=ME)
    assert purged.status_code == 204, purged.text

    again = await client.post(URL, json=body, headers=keyed("c-1"))

    assert again.status_code == 201, again.text
    assert again.json()["id"] != cid
    assert (await client.get(f"{URL}/{again.json()['id']}", headers=ME)).status_code == 200
    assert (await client.get(f"{URL}/{cid}", headers=ME)).status_code == 404


async def test_a_send_again_after_its_conversation_was_purged_names_no_purged_run(
    client: ApiClient,
) -> None:
    play(client, ScriptedTurn(text="Hello."))
    cid = (await client.post(URL, json={}, headers=ME)).json()["id"]
    url = f"{URL}/{cid}/messages"
    first = await client.post(url, json={"content": "Hi"}, headers=keyed("s-1"))
    assert first.status_code == 202, first.text
    purged = await client.delete(f"{URL}/{cid}", params={"purge": "true"}, headers=ME)
    assert purged.status_code == 204, purged.text

    again = await client.post(url, json={"content": "Hi"}, headers=keyed("s-1"))

    assert again.status_code == 404, again.text
    assert first.json()["run_id"] not in again.text
