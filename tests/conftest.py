"""Shared fixtures. Layer-specific fixtures live in `tests/fakes/` plugins listed below."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from tests.support.session_heap import freeze_between_tests, freeze_session_heap

# Tests never reach the internet: refuse any connection that is not loopback.
_real_connect = socket.socket.connect


def _loopback_only(self: socket.socket, address: object) -> object:
    host = address[0] if isinstance(address, tuple) else address
    if (
        isinstance(host, str)
        and self.family in (socket.AF_INET, socket.AF_INET6)
        and not (host.startswith("127.") or host in {"::1", "localhost"})
    ):
        raise RuntimeError(f"test tried to reach {host!r}: only loopback is allowed")
    return _real_connect(self, address)  # type: ignore[arg-type]


socket.socket.connect = _loopback_only  # type: ignore[method-assign,assignment]

pytest_plugins: list[str] = [
    "tests.fakes.anthropic_upstream",
    "tests.fakes.openai_upstream",
    "tests.fakes.db",
    "tests.support.openai_users",
    "tests.fakes.failover",
]


@pytest.fixture(autouse=True)
def _no_provider_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests build their settings explicitly; a developer's keys must never leak in."""
    for name in list(os.environ):
        if name.startswith(("OPENAI_", "ANTHROPIC_")) or name in {"DATABASE_URL", "JWT_SECRET"}:
            monkeypatch.delenv(name, raising=False)


@pytest.fixture(autouse=True)
def _files_in_temporary_storage(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Uploaded bytes go to the test's own temporary directory: settings built without a
    `files_dir` used the default, `./chat-bff-files` in the working directory, where every
    test run left blobs behind. A test that names its `files_dir` keeps it."""
    monkeypatch.setenv("FILES_DIR", str(tmp_path / "files"))


def pytest_collection_finish(session: pytest.Session) -> None:
    """The session's objects live as long as it does: freeze them (see session_heap)."""
    freeze_session_heap()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    freeze_between_tests()
