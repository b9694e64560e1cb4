"""An in-process app leaves the test session's frozen objects frozen (see session_heap)."""

from __future__ import annotations

import gc
from pathlib import Path

from app.settings import Settings
from tests.fakes.db import MakeApi
from tests.support.session_heap import freeze_session_heap


async def test_an_app_started_and_stopped_leaves_the_session_heap_frozen(
    make_api: MakeApi, tmp_path: Path
) -> None:
    settings = Settings(
        _env_file=None,
        database_url=f"sqlite+aiosqlite:///{tmp_path / 'chat.db'}",
        environment="test",
        log_json=False,
    )
    freeze_session_heap()
    frozen = gc.get_freeze_count()
    async with make_api(settings) as client:
        assert (await client.get("/healthz")).status_code == 200
    # The service's own freeze and unfreeze were left out: the next app's start-up
    # collection walks only what the tests made since, not the whole session (a few
    # frozen objects die by reference counting meanwhile; an unfreeze leaves none).
    assert gc.get_freeze_count() > frozen * 0.9 > 0
