"""`python3 dev.py serve` as a supervisor or a terminal runs it."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import suppress
from pathlib import Path

import pytest

from tests.packaging.support import (
    REPO,
    borrowing_venv,
    clean_env,
    digest_of,
    free_port,
    port_open,
    wait_healthy,
)

pytestmark = pytest.mark.e2e


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """dev.py and the files it stamps, beside a .venv whose stamp says it is up to date."""
    root = tmp_path / "checkout"
    root.mkdir()
    for name in ("dev.py", "pyproject.toml", "setup.py", "constraints.txt"):
        shutil.copy(REPO / name, root / name)
    borrowing_venv(root / ".venv", REPO)
    (root / ".venv" / ".chat-bff-deps").write_text(digest_of(root))
    return root


@pytest.fixture
def serve(checkout: Path) -> Iterator[tuple[subprocess.Popen[bytes], int, Path]]:
    port = free_port()
    log = checkout / "serve.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "dev.py", "serve"],
            cwd=checkout,
            env=clean_env(PORT=str(port), HOST="127.0.0.1"),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        wait_healthy(port, proc, log)
        yield proc, port, log
    finally:
        # Whatever dev.py left behind (an orphaned server, before the fix) goes too.
        with suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(5)


@pytest.mark.skipif(os.name == "nt", reason="POSIX signals")
def test_sigterm_to_dev_py_serve_stops_the_server(
    serve: tuple[subprocess.Popen[bytes], int, Path],
) -> None:
    proc, port, log = serve
    proc.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + 5
    while port_open(port) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not port_open(port), f"still serving after SIGTERM:\n{log.read_text()[-2000:]}"
    proc.wait(5)  # and nothing is left running under dev.py's name
    assert "Application shutdown complete" in log.read_text()  # a graceful stop, runs saved


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="reads /proc")
def test_dev_py_serve_runs_python_objects_on_glibcs_heap(
    serve: tuple[subprocess.Popen[bytes], int, Path],
) -> None:
    """So a burst of streams goes back to the system once it has closed (the heap trim)."""
    proc, _, _ = serve
    environ = Path(f"/proc/{proc.pid}/environ").read_bytes().split(b"\0")
    assert b"PYTHONMALLOC=malloc" in environ
