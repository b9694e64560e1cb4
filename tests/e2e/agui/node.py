"""Running the Node side of the AG-UI checks: install on first use, skip locally when Node
is unavailable (with the reason), fail under `CI` so CI cannot go green without it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).parent
CLIENT = HERE / "node_modules" / "@ag-ui" / "client" / "package.json"


def _unavailable(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(reason)
    pytest.skip(reason)


def prepare() -> None:
    if shutil.which("node") is None or shutil.which("npm") is None:
        _unavailable("node and npm are needed to drive @ag-ui/client")
    if CLIENT.is_file():
        return
    try:
        done = subprocess.run(
            ["sh", str(HERE / "setup.sh")], capture_output=True, text=True, timeout=600
        )
    except subprocess.TimeoutExpired:
        _unavailable("setup.sh (npm ci) timed out")
        return
    if done.returncode != 0 or not CLIENT.is_file():
        _unavailable(f"setup.sh failed ({done.returncode}): {done.stderr[-2000:]}")


def client_version() -> str:
    version: str = json.loads(CLIENT.read_text())["version"]
    return version


def run_node(script: str, *args: str, timeout: float = 120, context: str = "") -> Any:
    """Run a script of this folder; its last stdout line is JSON."""
    done = subprocess.run(
        ["node", str(HERE / script), *args],
        cwd=HERE,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, f"{done.stderr[-4000:]}\n{context}"
    return json.loads(done.stdout.strip().splitlines()[-1])
