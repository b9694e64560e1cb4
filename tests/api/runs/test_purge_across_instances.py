"""A purge through one instance leaves nothing of the conversation to read on another,
even when the message telling that instance to forget what it holds in memory comes late
or never (Redis pub/sub is at most once): a finished run it still holds is answered only
while the database still has it."""

from __future__ import annotations

from pathlib import Path

from app.providers.scripted import ScriptedTurn
from tests.api.runs.helpers import CONVERSATIONS, create, events, play, send, until
from tests.auth.tokens import sqlite_settings
from tests.fakes.db import MakeApi
from tests.limits.conftest import reachable_redis_url


async def test_a_run_purged_elsewhere_is_gone_without_the_forget_message(
    make_api: MakeApi, tmp_path: Path
) -> None:
    with_bus = sqlite_settings(tmp_path, redis_url=reachable_redis_url())
    # The purging instance is on the same database but not on the bus: its "forget"
    # never arrives, as when pub/sub drops it.
    without_bus = sqlite_settings(tmp_path)
    async with make_api(with_bus) as on_a, make_api(without_bus) as on_b:
        play(on_a, ScriptedTurn(text="remember me"))
        cid = await create(on_a)
        started = await send(on_a, cid)
        await until(on_a, cid, started["run_id"], "run_end")
        url = f"{CONVERSATIONS}/{cid}/runs/{started['run_id']}/events"
        assert [f.event for f in await events(on_a, url)][-1] == "run_end"

        purged = await on_b.delete(f"{CONVERSATIONS}/{cid}", params={"purge": "true"})

        assert purged.status_code == 204
        assert (await on_a.get(url)).status_code == 404
        assert (await on_a.get(url, params={"after": "1"})).status_code == 404
