"""What is kept of an answer to a tool's question cannot be checked against a guess by a
reader of the table (a PIN, yes or no): it is keyed with a server-held secret, or salted
per row without one, never the plain sha256 of the answer. An answer given before sent
again still finds the run that continued its call."""

from __future__ import annotations

from sqlalchemy import select, update

from app.store.tables.tools import ElicitationRow
from app.tools.pinning import args_hash
from tests.api.test_approvals import follow
from tests.api.test_submission_questions import answer, asked, client, colour
from tests.fakes.db import ApiClient

__all__ = ["client"]  # the fixture: an app whose `pick_colour` asks, and asks again

PLAIN = args_hash({"action": "accept", "content": {"colour": "green"}})


async def kept_hashes(client: ApiClient) -> list[str | None]:
    async with client.services.db.sessions() as s:
        return list(await s.scalars(select(ElicitationRow.answer_hash)))


async def test_the_kept_answer_is_no_plain_hash_and_a_resend_still_finds_its_run(
    client: ApiClient,
) -> None:
    cid, call_id, first = await asked(client)
    body = {"elicitation_id": first, **colour("green")}
    done = await answer(client, cid, call_id, 200, **body)
    await follow(client, done["events_url"])

    again = (await answer(client, cid, call_id, 409, **body))["error"]

    [kept] = await kept_hashes(client)
    assert kept is not None and kept != PLAIN and "green" not in kept
    assert again["run_id"] == done["run_id"]
    # Kept as a plain hash before: still known again, and another answer still is not.
    async with client.services.db.write() as tx:
        await tx.session.execute(update(ElicitationRow).values(answer_hash=PLAIN))
    before = (await answer(client, cid, call_id, 409, **body))["error"]
    other = (await answer(client, cid, call_id, 409, **{**body, **colour("red")}))["error"]
    assert before["run_id"] == done["run_id"]
    assert "run_id" not in other
