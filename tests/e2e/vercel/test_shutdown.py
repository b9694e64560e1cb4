"""SIGTERM while a Vercel AI SDK client streams a turn: the client gets a last word it
shows (an `error` chunk saying the service restarted) and a clean end, never a hung or
broken stream; after the restart the chat has no active run to resume (204)."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path

import httpx
import pytest

from tests.e2e.conftest import Launch
from tests.e2e.vercel.node import HERE, MAJORS, prepare
from tests.e2e.vercel.test_live_clients import LONG, _script

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize("major", MAJORS)
def test_sigterm_ends_the_clients_stream_with_an_error_and_abort(
    launch: Launch, tmp_path: Path, major: int
) -> None:
    prepare()
    service = launch(SCRIPTED_SCRIPT=str(_script(tmp_path)), DEFAULT_MODEL="scripted")
    node = subprocess.Popen(
        ["node", str(HERE / "shutdown.mjs"), str(major), service.base_url, LONG],
        cwd=HERE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert node.stdout is not None
        assert node.stdout.readline().strip() == "streaming"
        assert service.stop() in (0, -signal.SIGTERM)
        out, err = node.communicate(timeout=60)
    finally:
        if node.poll() is None:
            node.kill()
    assert node.returncode == 0, err[-3000:]
    seen = json.loads(out.strip().splitlines()[-1])

    kinds = [c["type"] for c in seen["chunks"]]
    assert "text-delta" in kinds
    # The last word is an error the client shows; when the run's own end reached this
    # stream before the process went, `abort` follows it (the run was interrupted).
    first_error = kinds.index("error")
    assert kinds[first_error + 1 :] in ([], ["finish-step", "abort"], ["error"]), kinds
    error = seen["chunks"][first_error]
    assert "restart" in error["errorText"].lower()
    assert seen["status"] == "error" and seen["error"] == error["errorText"]

    restarted = launch(db=service.db, SCRIPTED_SCRIPT=str(_script(tmp_path)))
    resumed = httpx.get(f"{restarted.base_url}/api/ui/chat/{seen['id']}/stream?v={major}")
    assert resumed.status_code == 204
