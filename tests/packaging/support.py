"""Helpers for tests that run the project the way a user installs and starts it."""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sysconfig
import time
import venv
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[2]

# Settings a developer's shell may hold that must not reach a process under test.
_NOT_INHERITED_PREFIXES = ("OPENAI_", "ANTHROPIC_", "JWT_", "STREAM_TOKEN_", "MODELS_", "REDIS_")
_NOT_INHERITED = {"DATABASE_URL", "DEFAULT_MODEL", "ENVIRONMENT", "PYTHONPATH", "VIRTUAL_ENV"}


def digest_of(root: Path) -> str:
    """What `root/dev.py` stamps a venv with for the dependency files beside it."""
    spec = importlib.util.spec_from_file_location("dev_under_test", root / "dev.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    digest: str = module.deps_digest(root)
    return digest


def clean_env(**settings: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(_NOT_INHERITED_PREFIXES) and k not in _NOT_INHERITED
    }
    env.update(ENVIRONMENT="test", LOG_LEVEL="WARNING", PYTHONUNBUFFERED="1", **settings)
    return env


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def port_open(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(0.5)
        return probe.connect_ex(("127.0.0.1", port)) == 0


def wait_healthy(port: int, proc: subprocess.Popen[bytes], log: Path, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"exited at start-up:\n{log.read_text(errors='replace')[-4000:]}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.05)
    raise AssertionError(f"never healthy:\n{log.read_text(errors='replace')[-4000:]}")


def borrowing_venv(path: Path, *extra_paths: Path) -> Path:
    """A venv at `path` (no pip: made in a second) that sees the packages of the venv
    running the tests, after its own and after `extra_paths`; returns its python.

    Only the borrowed folders are added, not their `.pth` hooks, so the editable install
    of this checkout does not come along: `app` is importable only from what the new
    venv holds itself or from `extra_paths`.
    """
    venv.EnvBuilder(with_pip=False, symlinks=os.name != "nt").create(path)
    python = path / ("Scripts" if os.name == "nt" else "bin") / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    borrowed = [*extra_paths, Path(sysconfig.get_paths()["purelib"])]
    (Path(purelib) / "borrowed.pth").write_text("".join(f"{p}\n" for p in borrowed))
    return python
