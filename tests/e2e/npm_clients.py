"""Running real npm clients from a folder of tests/e2e (package.json + package-lock.json +
setup.sh): install on first use, skip locally when Node is unavailable (with the reason),
fail under `CI` so CI cannot go green without them, and run a script whose last stdout
line is JSON."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tests.support.required import unavailable


def prepare(folder: Path, installed: Sequence[Path], what: str) -> None:
    """`installed`: files that exist once setup.sh has run."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        unavailable(f"node and npm are needed to drive {what}")
    if all(path.is_file() for path in installed):
        return
    try:
        done = subprocess.run(
            ["sh", str(folder / "setup.sh")], capture_output=True, text=True, timeout=600
        )
    except subprocess.TimeoutExpired:
        unavailable("setup.sh (npm ci) timed out")
        return
    if done.returncode != 0 or not all(path.is_file() for path in installed):
        unavailable(f"setup.sh failed ({done.returncode}): {done.stderr[-2000:]}")


def run_node(folder: Path, script: str, *args: str, timeout: float, context: str) -> Any:
    """Run a script of `folder`; its last stdout line is JSON."""
    done = subprocess.run(
        ["node", str(folder / script), *args],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, f"{done.stderr[-4000:]}\n{context}"
    return json.loads(done.stdout.strip().splitlines()[-1])
