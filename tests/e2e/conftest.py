"""A real chat-bff process for end-to-end tests.

`launch(**env)` starts `python -m uvicorn app.main:app` on a free 127.0.0.1 port with
settings in its environment (a fresh SQLite file unless given, DEBUG logs), waits for
`/healthz`, and returns a `Service`. Its stdout and stderr go to a file (`service.logs()`).
`service.stop()` sends SIGTERM and waits; `service.kill()` is kill -9. Processes still
running at the end of the test are stopped.

The process runs in a temporary directory (so no developer `.env` is read) with the
repository on PYTHONPATH, and inherits no provider key from the developer's environment.
"""

from __future__ import annotations

import importlib
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

import httpx
import pytest

from tests.fakes.openai_upstream import FakeOpenAIUpstream

REPO = Path(__file__).resolve().parents[2]
START_TIMEOUT = 120.0  # importing the vendor SDKs takes tens of seconds on a busy machine
STOP_TIMEOUT = 15.0
PACKAGE = "chat_bff_sdk"  # the Python client generated from openapi/openapi.json (`sdk`)
GENERATOR = Path(sys.executable).with_name("openapi-python-client")

_INHERITED_PREFIXES = ("OPENAI_", "ANTHROPIC_", "JWT_", "STREAM_TOKEN_", "MODELS_", "REDIS_")
_INHERITED_NAMES = {"DATABASE_URL", "DEFAULT_MODEL", "ENVIRONMENT", "LOG_LEVEL"}


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@dataclass
class Service:
    """One uvicorn process serving chat-bff; restart it with `launch(db=service.db)`."""

    workdir: Path
    db: Path
    env: dict[str, str]
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None
    # More uvicorn options (`--workers 2`): the process then leads a group of its own, so
    # kill -9 takes its workers with it.
    args: tuple[str, ...] = ()
    log_path: Path = field(init=False)

    def __post_init__(self) -> None:
        self.log_path = self.workdir / f"service-{self.port}.log"

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        log = self.log_path.open("ab")
        try:
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "uvicorn",
                    "app.main:app",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(self.port),
                    "--timeout-graceful-shutdown",
                    "5",
                    *self.args,
                ],
                cwd=self.workdir,
                start_new_session=bool(self.args),
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        finally:
            log.close()
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"chat-bff exited at start-up:\n{self.logs()[-4000:]}")
            try:
                if httpx.get(f"{self.base_url}/healthz", timeout=1).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.05)
        self.kill()
        raise RuntimeError(f"chat-bff did not become healthy:\n{self.logs()[-4000:]}")

    def stop(self) -> int:
        """SIGTERM, as a process manager would; returns the exit code."""
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
                raise
        return self.proc.returncode

    def kill(self) -> None:
        """kill -9: no shutdown code runs."""
        if self.proc is not None and self.proc.poll() is None:
            if self.args:
                os.killpg(self.proc.pid, signal.SIGKILL)
            else:
                self.proc.kill()
            self.proc.wait(5)

    def logs(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def db_rows(self) -> dict[str, list[tuple[object, ...]]]:
        """Every row of every table in the SQLite file (for leak checks)."""
        with sqlite3.connect(self.db) as conn:
            tables = [
                r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            ]
            return {t: conn.execute(f'SELECT * FROM "{t}"').fetchall() for t in tables}


Launch = Callable[..., Service]


def _base_env() -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(_INHERITED_PREFIXES) and k not in _INHERITED_NAMES
    }
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["PYTHONUNBUFFERED"] = "1"
    return env


@contextmanager
def _launcher(workdir: Path) -> Iterator[Launch]:
    started: list[Service] = []

    def start(
        db: Path | None = None,
        *,
        args: tuple[str, ...] = (),
        port: int | None = None,
        **settings: str,
    ) -> Service:
        path = db or workdir / "e2e.db"
        env = _base_env()
        env.update(
            DATABASE_URL=f"sqlite+aiosqlite:///{path}",
            LOG_LEVEL="DEBUG",
            ENVIRONMENT="test",
            SHUTDOWN_TIMEOUT_SECONDS="5",
        )
        env.update({k.upper(): v for k, v in settings.items()})
        service = Service(workdir=workdir, db=path, env=env, args=args, port=port or free_port())
        started.append(service)
        service.start()
        return service

    try:
        yield start
    finally:
        for service in started:
            service.kill()


@pytest.fixture
def launch(tmp_path: Path) -> Iterator[Launch]:
    """`launch(db=None, *, args=(), port=None, **settings)`: start a chat-bff process
    (settings as env names, `args` more uvicorn options, `port` a fixed one)."""
    with _launcher(tmp_path) as start:
        yield start


@pytest.fixture(scope="module")
def module_launch(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Launch]:
    """`launch` for a process shared by a module's tests (start-up costs seconds)."""
    with _launcher(tmp_path_factory.mktemp("e2e")) as start:
        yield start


@pytest.fixture(scope="module")
def module_upstream() -> Iterator[FakeOpenAIUpstream]:
    """A fake OpenAI upstream shared by a module's tests (queue replies per test)."""
    fake = FakeOpenAIUpstream()
    fake.start()
    try:
        yield fake
    finally:
        fake.stop()
    assert not fake.unexpected, f"requests without a queued reply: {fake.unexpected}"


def openai_backed(upstream_base_url: str, **extra: str) -> dict[str, str]:
    """Settings for a service whose default model is OpenAI behind the fake upstream."""
    return {
        "OPENAI_API_KEY": "sk-e2e-not-a-real-key",
        "OPENAI_BASE_URL": upstream_base_url,
        "PROVIDER_MAX_RETRIES": "0",
        **extra,
    }


@pytest.fixture(scope="session")
def sdk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    """The package openapi-python-client generates from the committed document, imported
    (generated with `--fail-on-warning`: a model it cannot express fails the test)."""
    pytest.importorskip(
        "openapi_python_client", reason="openapi-python-client is not installed (dev extra)"
    )
    root = tmp_path_factory.mktemp("sdk")
    config = root / "config.yaml"
    # No post hooks: they shell out to ruff, which need not be on PATH.
    config.write_text(f"post_hooks: []\npackage_name_override: {PACKAGE}\n")
    out = root / PACKAGE
    result = subprocess.run(
        [
            str(GENERATOR),
            "generate",
            "--path",
            str(REPO / "openapi" / "openapi.json"),
            "--output-path",
            str(out),
            "--meta",
            "none",
            "--config",
            str(config),
            "--fail-on-warning",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    report = result.stdout + result.stderr
    assert result.returncode == 0, report
    assert "Warning" not in report, report
    sys.path.insert(0, str(root))
    try:
        yield importlib.import_module(PACKAGE)
    finally:
        sys.path.remove(str(root))
        for name in [m for m in sys.modules if m == PACKAGE or m.startswith(PACKAGE + ".")]:
            del sys.modules[name]
